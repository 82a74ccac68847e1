//! Page tables: virtual pages to physical frames, allocated on first touch.
//!
//! Each address space (asid) maps its virtual pages to frames that are
//! allocated the first time a page is touched, on a NUMA node chosen by the
//! placement policy. The node is recorded per page, so memory latency can be
//! local or remote, and page migration (a later mechanism) only has to change
//! the entry. For radix walks the page-table pages themselves get frames too,
//! so their entries can be read through the data caches.
//!
//! Frames are handed out per address space: when the machine knows its
//! address spaces ([`PageTable::set_address_spaces`]), the `A` of them share
//! each node's frames by interleaving, the `k`-th frame of the `s`-th address
//! space being frame number `k * A + s` of the node's (seeded) order. So the
//! frames a process gets depend only on its own first touches, not on when
//! other processes ran: changing the schedule, or the engine's batch size,
//! does not move its pages in the physically indexed caches. Each address
//! space may use `1 / A` of a node; beyond that it spills to the next node.
//!
//! Entries live in leaves of [`LEAF_PAGES`] consecutive pages of one
//! address space, found through a small map: a program's pages cluster, so
//! its entries share host cache lines instead of being scattered over one
//! big hash table, which a scheduling run of many address spaces makes
//! larger than the host's caches.

use serde::{Deserialize, Serialize};

use crate::types::Asid;
use crate::util::hash::U64Map;
use crate::util::perm::Permutation;
use crate::util::rng::Rng;

/// Where a newly touched page is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// On the node of the socket whose core touched it first (Linux and
    /// Solaris default).
    #[default]
    FirstTouch,
    /// Round-robin over the nodes by virtual page number.
    Interleave,
    /// Always on this node.
    Bind(u32),
}

/// A page placed on a given node when first touched (`page_nodes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageNode {
    /// Its address space.
    pub asid: u32,
    /// Its virtual page number.
    pub vpn: u64,
    /// The node.
    pub node: u32,
}

/// How frames are chosen within a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameAllocation {
    /// In a seeded random order, as a long-running OS hands them out; pages
    /// that are adjacent in virtual memory land in unrelated cache sets.
    #[default]
    Random,
    /// In increasing order.
    Sequential,
    /// Physical address = virtual address (no translation), for comparisons
    /// with simulators that have none (pycachesim, Dinero). Different asids
    /// then alias; use it for one address space.
    Identity,
}

/// A page's translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageEntry {
    /// Physical frame number.
    pub frame: u64,
    /// NUMA node holding the frame.
    pub node: u32,
}

/// Pages per leaf (a power of two): 512 bytes of entries, and at most that
/// much for a page whose neighbours are never touched.
const LEAF_PAGES: usize = 64;

/// Why an address space must be here: the engine lends a socket only the
/// address spaces of the tasks it runs.
const LENT: &str = "an address space is used only where it is";

/// Marks a leaf slot that holds an entry.
const PRESENT: u64 = 1 << 63;
/// Marks an entry made inaccessible for a NUMA hinting fault (Linux's
/// automatic NUMA balancing): its next translation faults and clears it.
const HINT: u64 = 1 << 62;

impl PageEntry {
    /// Frame in the low 48 bits, node above (frames of 4 KiB pages cover
    /// 2^60 bytes in 48 bits), [`PRESENT`] on top.
    fn pack(self) -> u64 {
        PRESENT | self.frame | (self.node as u64) << 48
    }

    fn unpack(bits: u64) -> PageEntry {
        PageEntry { frame: bits & ((1 << 48) - 1), node: ((bits & !(PRESENT | HINT)) >> 48) as u32 }
    }
}

/// How frames are handed out per node and address space.
#[derive(Debug, Clone)]
struct Frames {
    per_node: u64,
    nodes: u32,
    /// Address spaces sharing each node (`A`).
    shares: u64,
    order: Option<Vec<Permutation>>,
}

impl Frames {
    /// A frame for address space `space` (which has taken `used` frames of
    /// each node) on `node`, or on the next node where its share has room;
    /// `None` when it has none left anywhere.
    fn allocate(&self, used: &mut [u64], node: u32, space: u64) -> Option<PageEntry> {
        (0..self.nodes).map(|i| (node + i) % self.nodes).find_map(|n| {
            let used = &mut used[n as usize];
            let index = *used * self.shares + space;
            if index >= self.per_node {
                return None;
            }
            *used += 1;
            let within = self.order.as_ref().map_or(index, |perms| perms[n as usize].apply(index));
            Some(PageEntry { frame: n as u64 * self.per_node + within, node: n })
        })
    }
}

/// One address space's page table: its entries, its page-table pages, and
/// the frames it has taken from each node.
#[derive(Debug, Clone)]
struct Space {
    /// Per (asid, virtual page / [`LEAF_PAGES`]): the leaf's index (the
    /// asid is in the key because asids the machine was not told about
    /// share the first space).
    leaves: U64Map,
    /// Per leaf: its key (the map's key of it), for listing the pages.
    leaf_keys: Vec<u64>,
    /// The leaves' slots, [`LEAF_PAGES`] per leaf: an entry packed by
    /// [`PageEntry::pack`], or 0.
    entries: Vec<u64>,
    /// Per (asid, radix level, prefix): the frame of that page-table page.
    tables: U64Map,
    /// Frames handed out, per node.
    used: Vec<u64>,
}

impl Space {
    fn new(nodes: u32) -> Space {
        Space {
            leaves: U64Map::default(),
            leaf_keys: Vec::new(),
            entries: Vec::new(),
            tables: U64Map::default(),
            used: vec![0; nodes as usize],
        }
    }

    /// The slot of a page's entry (`key` from [`super::tlb::key`]), if its
    /// leaf exists.
    #[inline(always)]
    fn slot(&self, key: u64) -> Option<usize> {
        let leaf = self.leaves.get(key / LEAF_PAGES as u64)?;
        Some(leaf as usize * LEAF_PAGES + key as usize % LEAF_PAGES)
    }
}

/// Every address space's page table, with the frames they share.
#[derive(Debug, Clone)]
pub struct PageTable {
    page_shift: u32,
    placement: Placement,
    identity: bool,
    frames: Frames,
    /// Per address space; `None` while lent out ([`PageTable::lend`]).
    spaces: Vec<Option<Space>>,
    /// Address space of each asid (index into `spaces`).
    space_of: Vec<u32>,
    /// Set when an allocation found every node full.
    pub exhausted: bool,
    /// NUMA hinting faults since the last [`PageTable::take_faults`]: the
    /// page's key, the node of the core that touched it, the page's node.
    faults: Vec<(u64, u32, u32)>,
    /// Pages placed on a given node whatever `placement` says, by TLB key.
    page_nodes: U64Map,
}

impl PageTable {
    /// Page tables over `nodes` nodes of `frames_per_node` frames each.
    pub fn new(
        page_shift: u32,
        nodes: u32,
        frames_per_node: u64,
        placement: Placement,
        allocation: FrameAllocation,
        seed: u64,
    ) -> PageTable {
        let order = (allocation == FrameAllocation::Random).then(|| {
            (0..nodes)
                .map(|n| Permutation::new(frames_per_node, &mut Rng::for_component(seed, &format!("memory/node{n}"))))
                .collect()
        });
        PageTable {
            page_shift,
            placement,
            identity: allocation == FrameAllocation::Identity,
            frames: Frames { per_node: frames_per_node, nodes, shares: 1, order },
            spaces: vec![Some(Space::new(nodes))],
            space_of: Vec::new(),
            exhausted: false,
            faults: Vec::new(),
            page_nodes: U64Map::default(),
        }
    }

    /// Place these pages on their nodes when first touched.
    pub fn place_pages(&mut self, pages: &[PageNode]) {
        for p in pages {
            self.page_nodes.insert(super::tlb::key(Asid(p.asid), p.vpn), p.node as u64);
        }
    }

    /// Page size as a shift.
    pub fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// Give each of `asids` its own share of every node's frames (see the
    /// module docs). Asids not listed share the first one's. Call before the
    /// first translation; later calls are ignored.
    pub fn set_address_spaces(&mut self, asids: &[Asid]) {
        if self.spaces.iter().flatten().any(|s| s.used.iter().any(|&u| u > 0)) {
            return;
        }
        let mut asids: Vec<u32> = asids.iter().map(|a| a.0).collect();
        asids.sort_unstable();
        asids.dedup();
        self.space_of = vec![0; asids.last().map_or(0, |&a| a as usize + 1)];
        for (space, &asid) in asids.iter().enumerate() {
            self.space_of[asid as usize] = space as u32;
        }
        self.frames.shares = asids.len().max(1) as u64;
        self.spaces = (0..self.frames.shares).map(|_| Some(Space::new(self.frames.nodes))).collect();
    }

    /// The address space of `asid`: the index [`PageTable::lend`] takes.
    pub fn space_of(&self, asid: Asid) -> usize {
        self.space_of.get(asid.0 as usize).copied().unwrap_or(0) as usize
    }

    fn space(&self, asid: Asid) -> Option<&Space> {
        self.spaces[self.space_of(asid)].as_ref()
    }

    /// A page table with the same frames holding only address spaces
    /// `spaces`, taken out of this one until [`PageTable::take_back`]: for
    /// a socket simulated on another thread, which uses only those.
    pub fn lend(&mut self, spaces: &[usize]) -> PageTable {
        let mut lent = PageTable {
            page_shift: self.page_shift,
            placement: self.placement,
            identity: self.identity,
            frames: self.frames.clone(),
            spaces: vec![None; self.spaces.len()],
            space_of: self.space_of.clone(),
            exhausted: false,
            faults: Vec::new(),
            page_nodes: self.page_nodes.clone(),
        };
        for &s in spaces {
            lent.spaces[s] = self.spaces[s].take();
        }
        lent
    }

    /// Put back the address spaces of a table [`PageTable::lend`] made.
    pub fn take_back(&mut self, lent: PageTable) {
        for (home, space) in self.spaces.iter_mut().zip(lent.spaces) {
            if space.is_some() {
                *home = space;
            }
        }
        self.exhausted |= lent.exhausted;
    }

    /// Ask the host to bring the entry of `vpn` in `asid` closer.
    #[inline]
    pub fn prefetch(&self, asid: Asid, vpn: u64) {
        if self.identity && self.frames.nodes == 1 {
            return;
        }
        if let Some((space, i)) = self.space(asid).and_then(|s| Some((s, s.slot(super::tlb::key(asid, vpn))?))) {
            crate::util::prefetch(space.entries.as_ptr().wrapping_add(i));
        }
    }

    /// The translation of `vpn` in `asid`, allocating a frame on first touch
    /// by a core of node `toucher_node`.
    #[inline]
    pub fn translate(&mut self, asid: Asid, vpn: u64, toucher_node: u32) -> PageEntry {
        self.translate_hinted(asid, vpn, toucher_node).0
    }

    /// [`PageTable::translate`], and whether it took a NUMA hinting fault
    /// (the entry was protected by [`PageTable::protect`]; it is not any
    /// more, and the fault is logged).
    #[inline]
    pub fn translate_hinted(&mut self, asid: Asid, vpn: u64, toucher_node: u32) -> (PageEntry, bool) {
        if self.identity && self.frames.nodes == 1 {
            return (PageEntry { frame: vpn, node: 0 }, false);
        }
        let share = self.space_of(asid);
        let key = super::tlb::key(asid, vpn);
        let PageTable { spaces, frames, exhausted, identity, placement, page_nodes, .. } = self;
        let space = spaces[share].as_mut().expect(LENT);
        let i = match space.slot(key) {
            Some(i) if space.entries[i] & HINT != 0 => {
                space.entries[i] &= !HINT;
                let entry = PageEntry::unpack(space.entries[i]);
                self.faults.push((key, toucher_node, entry.node));
                return (entry, true);
            }
            Some(i) if space.entries[i] != 0 => return (PageEntry::unpack(space.entries[i]), false),
            Some(i) => i,
            None => {
                let leaf = space.entries.len() / LEAF_PAGES;
                space.leaves.insert(key / LEAF_PAGES as u64, leaf as u64);
                space.leaf_keys.push(key / LEAF_PAGES as u64);
                space.entries.resize(space.entries.len() + LEAF_PAGES, 0);
                leaf * LEAF_PAGES + key as usize % LEAF_PAGES
            }
        };
        let node = match page_nodes.get(key) {
            Some(n) => n as u32,
            None => node_for(*placement, frames.nodes, vpn, toucher_node),
        };
        let entry = if *identity {
            PageEntry { frame: vpn, node }
        } else {
            frames.allocate(&mut space.used, node, share as u64).unwrap_or_else(|| {
                *exhausted = true;
                PageEntry { frame: 0, node }
            })
        };
        space.entries[i] = entry.pack();
        (entry, false)
    }

    /// Protect the mapped pages of `asid` in `vpns` for NUMA hinting faults
    /// (Linux's `change_prot_numa`); returns how many were updated.
    pub fn protect(&mut self, asid: Asid, vpns: &[u64]) -> u64 {
        let share = self.space_of(asid);
        let Some(space) = self.spaces[share].as_mut() else { return 0 };
        let mut updated = 0;
        for &vpn in vpns {
            if let Some(i) = space.slot(super::tlb::key(asid, vpn)).filter(|&i| space.entries[i] != 0) {
                updated += (space.entries[i] & HINT == 0) as u64;
                space.entries[i] |= HINT;
            }
        }
        updated
    }

    /// The NUMA hinting faults taken since the last call: each page's key,
    /// the node that touched it, the page's node.
    pub fn take_faults(&mut self) -> Vec<(u64, u32, u32)> {
        std::mem::take(&mut self.faults)
    }

    /// Frame of the page-table page at `level` (0 = root) covering `vpn` in a
    /// radix tree of `levels` levels with 512 entries per table, allocating
    /// it on first use; returns the physical byte address of the entry.
    pub fn entry_addr(&mut self, asid: Asid, vpn: u64, level: u32, levels: u32, toucher_node: u32) -> u64 {
        let shift = 9 * (levels - level);
        let prefix = if shift >= 64 { 0 } else { vpn >> shift };
        let index = (vpn >> (9 * (levels - 1 - level))) & 511;
        // asid (12 bits) | level (3 bits) | prefix (below 2^43: a page number
        // of at most 52 bits shifted right by at least 9).
        let key = (asid.0 as u64) << 52 | (level as u64) << 49 | prefix;
        let share = self.space_of(asid);
        let PageTable { spaces, frames, exhausted, .. } = self;
        let space = spaces[share].as_mut().expect(LENT);
        let frame = match space.tables.get(key) {
            Some(f) => f,
            None => {
                let f = frames.allocate(&mut space.used, toucher_node, share as u64).map(|e| e.frame).unwrap_or_else(
                    || {
                        *exhausted = true;
                        0
                    },
                );
                space.tables.insert(key, f);
                f
            }
        };
        // A table takes the first 4 KiB of a frame of the data page size.
        (frame << self.page_shift) + index * 8
    }

    /// Move the page `vpn` of `asid` to a new frame on `node` (page
    /// migration; the old frame is not handed out again). Returns the old
    /// and new entries, or `None` if the page is not mapped, is already on
    /// `node`, or `node` has no frame left for the address space.
    pub fn move_page(&mut self, asid: Asid, vpn: u64, node: u32) -> Option<(PageEntry, PageEntry)> {
        if self.identity || node >= self.frames.nodes {
            return None;
        }
        let share = self.space_of(asid);
        let PageTable { spaces, frames, .. } = self;
        let space = spaces[share].as_mut().expect(LENT);
        let i = space.slot(super::tlb::key(asid, vpn)).filter(|&i| space.entries[i] != 0)?;
        let old = PageEntry::unpack(space.entries[i]);
        if old.node == node {
            return None;
        }
        // Only `node`: a page moved to a full node stays where it is.
        let mut used = space.used.clone();
        let new = frames.allocate(&mut used, node, share as u64).filter(|e| e.node == node)?;
        space.used = used;
        space.entries[i] = new.pack();
        Some((old, new))
    }

    /// Every mapped page of every address space: its key
    /// ([`super::tlb::key`]) and entry, in no particular order.
    pub fn pages(&self) -> impl Iterator<Item = (u64, PageEntry)> + '_ {
        self.spaces.iter().flatten().flat_map(|space| {
            space.leaf_keys.iter().enumerate().flat_map(move |(leaf, &lkey)| {
                (0..LEAF_PAGES).filter_map(move |j| {
                    let bits = space.entries[leaf * LEAF_PAGES + j];
                    (bits != 0).then(|| (lkey * LEAF_PAGES as u64 + j as u64, PageEntry::unpack(bits)))
                })
            })
        })
    }

    /// Frames allocated on `node` (data and page-table pages).
    pub fn frames_used(&self, node: u32) -> u64 {
        self.spaces.iter().flatten().map(|s| s.used.get(node as usize).copied().unwrap_or(0)).sum()
    }
}

/// The node of a page first touched by a core of `toucher_node` under `placement`.
fn node_for(placement: Placement, nodes: u32, vpn: u64, toucher_node: u32) -> u32 {
    match placement {
        Placement::FirstTouch => toucher_node,
        Placement::Interleave => (vpn % nodes as u64) as u32,
        Placement::Bind(n) => n,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Against a map of every page touched: with sequential frames and
        /// the asids in one share, the k-th distinct page touched gets frame k,
        /// and a page touched again keeps its frame; pages clustered within a
        /// leaf, across leaf edges and scattered far apart alike.
        #[test]
        fn pages_keep_the_frame_of_their_first_touch(
            touches in proptest::collection::vec(
                (0u32..3, prop_oneof![0u64..200, (0u64..1 << 40), Just((1 << 52) - 1)]), 1..400),
        ) {
            let mut pt = PageTable::new(12, 1, 1 << 20, Placement::FirstTouch, FrameAllocation::Sequential, 1);
            let mut reference: HashMap<(u32, u64), u64> = HashMap::new();
            for (asid, vpn) in touches {
                let next = reference.len() as u64;
                let expected = *reference.entry((asid, vpn)).or_insert(next);
                prop_assert_eq!(pt.translate(Asid(asid), vpn, 0), PageEntry { frame: expected, node: 0 });
            }
            prop_assert_eq!(pt.frames_used(0), reference.len() as u64);
        }
    }

    #[test]
    fn first_touch_places_on_the_touching_node_and_remembers() {
        let mut pt = PageTable::new(12, 2, 1024, Placement::FirstTouch, FrameAllocation::Sequential, 1);
        let a = pt.translate(Asid(0), 5, 1);
        assert_eq!(a, PageEntry { frame: 1024, node: 1 });
        assert_eq!(pt.translate(Asid(0), 5, 0), a, "a second touch from elsewhere keeps the page");
        assert_eq!(pt.translate(Asid(0), 6, 0), PageEntry { frame: 0, node: 0 });
        assert_eq!(pt.translate(Asid(1), 5, 0), PageEntry { frame: 1, node: 0 }, "asids are separate");
    }

    #[test]
    fn interleave_and_bind() {
        let mut pt = PageTable::new(12, 4, 16, Placement::Interleave, FrameAllocation::Sequential, 1);
        let nodes: Vec<u32> = (0..8).map(|v| pt.translate(Asid(0), v, 0).node).collect();
        assert_eq!(nodes, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        let mut pt = PageTable::new(12, 4, 16, Placement::Bind(2), FrameAllocation::Sequential, 1);
        assert!((0..8).all(|v| pt.translate(Asid(0), v, 0).node == 2));
    }

    #[test]
    fn random_frames_are_distinct_and_spill_to_other_nodes_when_full() {
        let mut pt = PageTable::new(12, 2, 8, Placement::FirstTouch, FrameAllocation::Random, 3);
        let entries: Vec<PageEntry> = (0..16).map(|v| pt.translate(Asid(0), v, 0)).collect();
        let mut frames: Vec<u64> = entries.iter().map(|e| e.frame).collect();
        frames.sort();
        assert_eq!(frames, (0..16).collect::<Vec<_>>());
        assert_eq!(entries.iter().filter(|e| e.node == 1).count(), 8);
        assert!(entries[..8].iter().any(|e| e.frame != entries.iter().position(|x| x == e).unwrap() as u64));
        assert!(!pt.exhausted);
        pt.translate(Asid(0), 99, 0);
        assert!(pt.exhausted);
    }

    #[test]
    fn each_address_space_gets_the_same_frames_whatever_the_others_do() {
        // Asid 7's frames depend only on its own touches: the same with the
        // other address spaces touching before it, after it, or not at all.
        let frames = |others_first: Option<bool>| {
            let mut pt = PageTable::new(12, 1, 4096, Placement::FirstTouch, FrameAllocation::Random, 5);
            pt.set_address_spaces(&[Asid(7), Asid(2), Asid(9)]);
            let mut mine = Vec::new();
            if others_first == Some(true) {
                for v in 0..50 {
                    pt.translate(Asid(2), v, 0);
                }
            }
            for v in 0..40 {
                mine.push(pt.translate(Asid(7), v * 3, 0).frame);
                if others_first == Some(false) {
                    pt.translate(Asid(9), v, 0);
                }
            }
            mine
        };
        let alone = frames(None);
        assert_eq!(frames(Some(true)), alone);
        assert_eq!(frames(Some(false)), alone);
        let mut distinct = alone.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 40);
    }

    #[test]
    fn an_address_space_beyond_its_share_spills_to_the_next_node() {
        // Two spaces share 2 nodes of 8 frames: 4 per space per node.
        let mut pt = PageTable::new(12, 2, 8, Placement::FirstTouch, FrameAllocation::Sequential, 1);
        pt.set_address_spaces(&[Asid(0), Asid(1)]);
        let nodes: Vec<u32> = (0..8).map(|v| pt.translate(Asid(1), v, 0).node).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1]);
        let frames: Vec<u64> = (0..4).map(|v| pt.translate(Asid(1), v, 0).frame).collect();
        assert_eq!(frames, [1, 3, 5, 7], "the odd frames of node 0");
        assert_eq!((pt.frames_used(0), pt.frames_used(1)), (4, 4));
        assert!(!pt.exhausted);
        pt.translate(Asid(1), 100, 0);
        assert!(pt.exhausted, "its share of both nodes is used up");
        assert_eq!(pt.translate(Asid(0), 0, 0), PageEntry { frame: 0, node: 0 }, "the other space still has room");
    }

    #[test]
    fn a_lent_address_space_gives_the_frames_it_would_have_given_at_home() {
        let table = || {
            let mut pt = PageTable::new(12, 2, 4096, Placement::FirstTouch, FrameAllocation::Random, 5);
            pt.set_address_spaces(&[Asid(1), Asid(2)]);
            pt
        };
        let touch = |pt: &mut PageTable, pages: std::ops::Range<u64>| -> Vec<PageEntry> {
            pages.map(|v| pt.translate(Asid(2), v * 7, (v % 2) as u32)).collect()
        };
        let mut home = table();
        let expected = touch(&mut home, 0..100);
        let mut lender = table();
        let mut got = touch(&mut lender, 0..50);
        let mut lent = lender.lend(&[lender.space_of(Asid(2))]);
        assert_eq!(lender.frames_used(0) + lender.frames_used(1), 0, "the space left with its frames");
        got.extend(touch(&mut lent, 50..100));
        lender.take_back(lent);
        assert_eq!(got, expected);
        assert_eq!(touch(&mut lender, 0..100), expected, "and came back with its pages");
        assert_eq!((lender.frames_used(0), lender.frames_used(1)), (home.frames_used(0), home.frames_used(1)));
        assert_eq!(lender.translate(Asid(1), 3, 0), home.translate(Asid(1), 3, 0), "the other space stayed");
    }

    #[test]
    fn identity_maps_pages_to_themselves() {
        let mut pt = PageTable::new(12, 1, 16, Placement::FirstTouch, FrameAllocation::Identity, 1);
        assert_eq!(pt.translate(Asid(3), 0xABCDE, 0), PageEntry { frame: 0xABCDE, node: 0 });
    }

    #[test]
    fn radix_entries_share_upper_tables_and_differ_below() {
        let mut pt = PageTable::new(12, 1, 1 << 20, Placement::FirstTouch, FrameAllocation::Sequential, 1);
        let a: Vec<u64> = (0..4).map(|l| pt.entry_addr(Asid(0), 0x1000, l, 4, 0)).collect();
        let b: Vec<u64> = (0..4).map(|l| pt.entry_addr(Asid(0), 0x1001, l, 4, 0)).collect();
        assert_eq!(a[..3], b[..3], "neighbouring pages share the upper three tables");
        assert_eq!(b[3], a[3] + 8, "and sit in adjacent entries of the last");
        let c = pt.entry_addr(Asid(0), 0x1000 + (1 << 27), 0, 4, 0);
        assert_eq!(c, a[0] + 8, "the root entry covers 2^27 pages");
    }
}

//! The regions of region scheduling (spec 2.2, 2.6, 2.7): pages grouped
//! into regions, each region maybe mapped to a cache domain; the accessed
//! bits and 32-bit histories of the pages; the working-set estimate of a
//! region; and regioning, which merges regions a task goes back and forth
//! between.
//!
//! Regions partition the pages an address space has touched: a page starts
//! as a one-page `Seed` region; regioning merges regions into `Regular`
//! ones; pages the source never schedules (code, stack) are `Global`. A
//! region keeps the domain it is mapped to (`None`: not yet), and the page
//! that founded it names it (the source's region ids are frame numbers).

use std::collections::HashSet;

use crate::mem::tlb;
use crate::types::Asid;
use crate::util::hash::U64Map;

/// A region's kind (spec Table 1's flags; "local" is a mapped one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// One page, never merged (or torn down).
    Seed,
    /// Merged by regioning.
    Regular,
    /// Open everywhere, never scheduled: code and stack pages.
    Global,
}

/// One region.
#[derive(Debug, Clone)]
pub(super) struct Region {
    /// Its address space.
    pub(super) asid: Asid,
    /// The page that founded it (its id in reports).
    pub(super) founder: u64,
    /// Its pages (indexes into [`Regions`]' pages).
    pub(super) pages: Vec<u32>,
    pub(super) kind: Kind,
    /// The cache domain it is mapped to.
    pub(super) cache: Option<u32>,
    /// The address space's reference count when a regioning task last left it.
    pub(super) left_at: u64,
    /// Whether it still exists (merged regions leave an empty slot).
    pub(super) alive: bool,
    /// The balancing pass that last moved it (0: none).
    pub(super) moved: u64,
}

/// One page.
#[derive(Debug, Clone, Copy)]
pub(super) struct Page {
    pub(super) vpn: u64,
    pub(super) region: u32,
    /// Touched since the last scan.
    pub(super) accessed: bool,
    /// One bit per scan, newest lowest: whether it was touched in that
    /// period (the regions' `width` newest).
    pub(super) history: u64,
    /// Scans that shifted its history, at most the width.
    pub(super) scans: u8,
    /// Micro-schedules its touches caused since its address space's last phase ended.
    pub(super) moves: u32,
}

/// What a page whose history has `ones` ones counts for in the working-set
/// estimate (spec 2.7): 1 for 26..=32 ones, 3/4 for 20..=25, 1/2 for
/// 14..=19, 1/4 for 8..=13, nothing below 8 (32 ones fall in the source's
/// last bin, 31).
fn bin_weight(ones: u32) -> f64 {
    match ones {
        26.. => 1.0,
        20..=25 => 0.75,
        14..=19 => 0.5,
        8..=13 => 0.25,
        _ => 0.0,
    }
}

/// The ones of a page's history as if it spanned the formula's 32 scans:
/// the ones of its `scans` samples (at most the history's width) scaled to
/// 32 (rounded to nearest), so that a page scanned fewer times than the
/// width, or a history narrower or wider than 32 bits, counts the share of
/// scans that found it touched; a page never scanned (it exists, so it
/// was touched) counts as touched at every scan. The spec's formula
/// assumes 32 samples: without the scaling a new address space would weigh
/// a quarter of its size, or nothing, for the first 26 scans.
fn full_ones(history: u64, scans: u8) -> u32 {
    match scans as u32 {
        0 => 32,
        s => (history.count_ones() * 32 + s / 2) / s,
    }
}

/// Every region and page of the run.
#[derive(Debug)]
pub(super) struct Regions {
    pub(super) regions: Vec<Region>,
    pub(super) pages: Vec<Page>,
    /// Page index by `tlb::key(asid, vpn)`.
    index: U64Map,
    /// Scans a page's history keeps (1 to 64).
    width: u8,
}

impl Default for Regions {
    /// The source's 32-bit histories.
    fn default() -> Regions {
        Regions::with_width(32)
    }
}

impl Region {
    /// A region of page `p` alone (`vpn`, its founder), never moved by the balancer.
    fn one_page(asid: Asid, p: u32, vpn: u64, kind: Kind, cache: Option<u32>, left_at: u64) -> Region {
        Region { asid, founder: vpn, pages: vec![p], kind, cache, left_at, alive: true, moved: 0 }
    }
}

impl Regions {
    /// No region yet; histories of `width` scans (1 to 64).
    pub(super) fn with_width(width: u8) -> Regions {
        Regions { regions: Vec::new(), pages: Vec::new(), index: U64Map::default(), width }
    }

    /// The page `vpn` of `asid`, made a new seed region of kind `kind`
    /// (with `cache`) if it is new; its index.
    pub(super) fn page(&mut self, asid: Asid, vpn: u64, kind: Kind, cache: Option<u32>) -> u32 {
        let key = tlb::key(asid, vpn);
        if let Some(p) = self.index.get(key) {
            return p as u32;
        }
        let p = self.pages.len() as u32;
        let region = self.regions.len() as u32;
        self.pages.push(Page { vpn, region, accessed: false, history: 0, scans: 0, moves: 0 });
        self.regions.push(Region::one_page(asid, p, vpn, kind, cache, 0));
        self.index.insert(key, p as u64);
        p
    }

    /// Merge regions `a` and `b` (the larger keeps its slot and its
    /// founder); returns the region that holds both, `Regular`, mapped
    /// where the larger was (most of its lines are cached there), else
    /// where the smaller was; if neither was mapped the balancer maps it
    /// when the phase ends.
    pub(super) fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == b {
            return a;
        }
        let (big, small) =
            if self.regions[a as usize].pages.len() >= self.regions[b as usize].pages.len() { (a, b) } else { (b, a) };
        let moved = std::mem::take(&mut self.regions[small as usize].pages);
        for &p in &moved {
            self.pages[p as usize].region = big;
        }
        self.regions[small as usize].alive = false;
        let other = self.regions[small as usize].cache;
        let keep = &mut self.regions[big as usize];
        keep.pages.extend(moved);
        keep.kind = Kind::Regular;
        keep.cache = keep.cache.or(other);
        big
    }

    /// Turn region `r` back into one seed region per page, each mapped
    /// where `r` was (spec 2.6, teardown).
    pub(super) fn tear_down(&mut self, r: u32) {
        let region = &mut self.regions[r as usize];
        let (asid, cache, left_at) = (region.asid, region.cache, region.left_at);
        let pages = std::mem::take(&mut region.pages);
        let Some((&first, rest)) = pages.split_first() else { return };
        let region = &mut self.regions[r as usize];
        region.pages = vec![first];
        region.kind = Kind::Seed;
        region.founder = self.pages[first as usize].vpn;
        for &p in rest {
            let id = self.regions.len() as u32;
            self.pages[p as usize].region = id;
            let vpn = self.pages[p as usize].vpn;
            self.regions.push(Region::one_page(asid, p, vpn, Kind::Seed, cache, left_at));
        }
    }

    /// Take page `p` out of its region into a seed region of its own, not
    /// mapped (spec 2.6's shrink); returns the new region.
    pub(super) fn detach(&mut self, p: u32) -> u32 {
        let r = self.pages[p as usize].region;
        let region = &mut self.regions[r as usize];
        region.pages.retain(|&q| q != p);
        let (asid, left_at) = (region.asid, region.left_at);
        if let Some(&first) = region.pages.first() {
            if region.founder == self.pages[p as usize].vpn {
                region.founder = self.pages[first as usize].vpn;
            }
        }
        let id = self.regions.len() as u32;
        let vpn = self.pages[p as usize].vpn;
        self.pages[p as usize].region = id;
        self.regions.push(Region::one_page(asid, p, vpn, Kind::Seed, None, left_at));
        id
    }

    /// The working-set estimate of region `r`, in pages: the spec's
    /// formula over its pages' histories, each as if it held 32 scans
    /// ([`full_ones`]).
    pub(super) fn working_set(&self, r: u32) -> f64 {
        let pages = self.regions[r as usize].pages.iter().map(|&p| self.pages[p as usize]);
        pages.map(|p| bin_weight(full_ones(p.history, p.scans))).sum()
    }

    /// A scan of `asid`'s pages in the regions `open` picks: each page's
    /// accessed bit shifts into its history and clears; `seen` is told the
    /// pages found accessed.
    pub(super) fn scan(&mut self, asid: Asid, open: impl Fn(&Region) -> bool, mut seen: impl FnMut(u64)) {
        let (width, kept) = (self.width, u64::MAX >> (64 - self.width));
        for region in self.regions.iter().filter(|r| r.alive && r.asid == asid && open(r)) {
            for &p in &region.pages {
                let page = &mut self.pages[p as usize];
                if page.accessed {
                    seen(page.vpn);
                }
                page.history = (page.history << 1 | page.accessed as u64) & kept;
                page.scans = (page.scans + 1).min(width);
                page.accessed = false;
            }
        }
    }

    /// The live regions.
    pub(super) fn alive(&self) -> impl Iterator<Item = (u32, &Region)> {
        self.regions.iter().enumerate().filter(|(_, r)| r.alive).map(|(i, r)| (i as u32, r))
    }
}

/// One task's regioning phase (spec 2.6): every region but the open one is
/// closed, so every move to another region is seen; a region re-entered
/// within `merge_distance` references of its address space after it was
/// left merges with every region entered since (those above it in the LRU
/// stack).
#[derive(Debug, Default)]
pub(super) struct Phase {
    /// The region open now.
    pub(super) open: Option<u32>,
    /// The regions left in this phase, least recently left first.
    stack: Vec<u32>,
    /// Merges made.
    pub(super) merges: u64,
    /// Regions this phase made out of seeds only (some since merged further).
    fresh: HashSet<u32>,
    /// Regions found before this phase that it grew (some since merged further).
    grown: Vec<u32>,
}

impl Phase {
    /// The regions found before this phase that it grew and that still
    /// exist: what a teardown may take (spec 2.6's "largest region found in
    /// this phase"; a region the phase built from seeds has just been
    /// found and stays).
    pub(super) fn grown<'a>(&'a self, regions: &'a Regions) -> impl Iterator<Item = u32> + 'a {
        let mut seen = self.grown.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.into_iter().filter(|&r| regions.regions[r as usize].alive)
    }

    /// Whether `r` holds a region found before this phase.
    fn old(&self, regions: &Regions, r: u32) -> bool {
        regions.regions[r as usize].kind == Kind::Regular && !self.fresh.contains(&r)
    }

    /// The task touched region `r` when its address space had made `now`
    /// references: returns whether that was a fault (another region was
    /// open), with the regions merged as the rule says.
    pub(super) fn touch(&mut self, regions: &mut Regions, r: u32, now: u64, merge_distance: u64) -> bool {
        if self.open == Some(r) {
            return false;
        }
        if let Some(prev) = self.open.take() {
            regions.regions[prev as usize].left_at = now;
            self.stack.retain(|&x| x != prev);
            self.stack.push(prev);
        }
        let mut cur = r;
        if let Some(at) = self.stack.iter().position(|&x| x == r) {
            let idle = now.saturating_sub(regions.regions[r as usize].left_at);
            let above = self.stack.split_off(at);
            if idle < merge_distance {
                let mut grew = self.old(regions, cur);
                for &other in &above[1..] {
                    grew |= self.old(regions, other);
                    cur = regions.merge(cur, other);
                    self.merges += 1;
                }
                if above.len() > 1 {
                    match grew {
                        true => {
                            self.fresh.remove(&cur);
                            self.grown.push(cur);
                        }
                        false => {
                            self.fresh.insert(cur);
                        }
                    }
                }
            } else {
                self.stack.extend_from_slice(&above[1..]);
            }
        }
        self.open = Some(cur);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimate of pages with these full histories, page by page.
    fn working_set(histories: impl Iterator<Item = u32>) -> f64 {
        histories.map(|h| bin_weight(h.count_ones())).sum()
    }

    /// The spec's formula as written there: a histogram `H(x)` of the
    /// histories' counts of ones in 32 bins (32 ones clipped into bin 31),
    /// then `y = sum H(26..31) + 3/4 sum H(20..25) + 1/2 sum H(14..19) +
    /// 1/4 sum H(8..13)`.
    fn by_the_histogram(histories: &[u32]) -> f64 {
        let mut h = [0u64; 32];
        for x in histories {
            h[(x.count_ones() as usize).min(31)] += 1;
        }
        let sum = |a: usize, b: usize| h[a..=b].iter().sum::<u64>() as f64;
        sum(26, 31) + 0.75 * sum(20, 25) + 0.5 * sum(14, 19) + 0.25 * sum(8, 13)
    }

    #[test]
    fn the_working_set_is_the_specs_weighted_histogram() {
        let ones = |n: u32| if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        // Every boundary of the bins, by hand: 1 + 1 + 3/4 + 3/4 + 1/2 + 1/2 + 1/4 + 1/4 + 0.
        let edges: Vec<u32> = [32, 26, 25, 20, 19, 14, 13, 8, 7].iter().map(|&n| ones(n)).collect();
        assert_eq!(working_set(edges.iter().copied()), 5.0);
        let mut rng = crate::util::rng::Rng::from_seed(9);
        for _ in 0..200 {
            let histories: Vec<u32> = (0..rng.below(50)).map(|_| rng.next_u64() as u32 >> rng.below(32)).collect();
            assert_eq!(working_set(histories.iter().copied()), by_the_histogram(&histories));
        }
    }

    #[test]
    fn regioning_merges_what_the_task_goes_back_to_within_the_merge_distance() {
        let asid = Asid(0);
        let mut r = Regions::default();
        let page = |r: &mut Regions, vpn| {
            let p = r.page(asid, vpn, Kind::Seed, None);
            r.pages[p as usize].region
        };
        let mut phase = Phase::default();
        let q = 15;
        // A, B, back to A 10 after leaving it: A and B merge.
        for (vpn, t) in [(1, 0), (2, 10), (1, 20)] {
            let region = page(&mut r, vpn);
            assert!(phase.touch(&mut r, region, t, q));
        }
        assert_eq!(phase.merges, 1);
        // Within the merged region, no fault.
        let ab = page(&mut r, 2);
        assert!(!phase.touch(&mut r, ab, 25, q));
        // C, D, back to C 60 after leaving it: no merge; then D 5 after
        // leaving it: D merges with C, the only region entered since.
        for (vpn, t) in [(3, 30), (4, 40), (3, 100), (4, 105)] {
            let region = page(&mut r, vpn);
            assert!(phase.touch(&mut r, region, t, q));
        }
        assert_eq!(phase.merges, 2);
        // Back to AB, 80 after it was left: no merge with CD.
        let ab = page(&mut r, 1);
        assert!(phase.touch(&mut r, ab, 110, q));
        let mut found: Vec<Vec<u64>> = r
            .alive()
            .map(|(_, g)| {
                let mut v: Vec<u64> = g.pages.iter().map(|&p| r.pages[p as usize].vpn).collect();
                v.sort();
                v
            })
            .collect();
        found.sort();
        assert_eq!(found, vec![vec![1, 2], vec![3, 4]]);
        assert!(r.alive().all(|(_, g)| g.kind == Kind::Regular));
    }

    #[test]
    fn a_region_reentered_merges_with_every_region_entered_since() {
        let asid = Asid(0);
        let mut r = Regions::default();
        let mut phase = Phase::default();
        // A B C D, then A again soon: all four become one.
        for (vpn, t) in [(1, 0), (2, 1), (3, 2), (4, 3), (1, 4)] {
            let p = r.page(asid, vpn, Kind::Seed, None);
            let region = r.pages[p as usize].region;
            phase.touch(&mut r, region, t, 10);
        }
        assert_eq!(phase.merges, 3);
        assert_eq!(r.alive().count(), 1);
    }

    #[test]
    fn teardown_makes_seeds_mapped_where_the_region_was() {
        let asid = Asid(3);
        let mut r = Regions::default();
        let ps: Vec<u32> = [(10, None), (11, Some(0)), (12, Some(1))]
            .into_iter()
            .map(|(v, cache)| r.page(asid, v, Kind::Seed, cache))
            .collect();
        let a = r.pages[ps[0] as usize].region;
        let b = r.pages[ps[1] as usize].region;
        let c = r.pages[ps[2] as usize].region;
        // Of two seeds, the first is the larger; it was unmapped: the
        // second's mapping. Then AB is the larger, mapped to 0.
        let ab = r.merge(a, b);
        assert_eq!(r.regions[ab as usize].cache, Some(0));
        let abc = r.merge(ab, c);
        assert_eq!(r.alive().count(), 1);
        assert_eq!(r.regions[abc as usize].cache, Some(0));
        let mut fresh = Regions::default();
        let (d, e) = (fresh.page(asid, 20, Kind::Seed, None), fresh.page(asid, 21, Kind::Seed, None));
        let de = fresh.merge(fresh.pages[d as usize].region, fresh.pages[e as usize].region);
        assert_eq!(fresh.regions[de as usize].cache, None, "neither was mapped");
        r.regions[abc as usize].cache = Some(1);
        r.tear_down(abc);
        let seeds: Vec<(u64, Kind, Option<u32>)> = r.alive().map(|(_, g)| (g.founder, g.kind, g.cache)).collect();
        assert_eq!(seeds.len(), 3);
        assert!(seeds.iter().all(|&(_, k, c)| k == Kind::Seed && c == Some(1)));
        for &p in &ps {
            let g = &r.regions[r.pages[p as usize].region as usize];
            assert_eq!(g.pages, vec![p]);
            assert_eq!(g.founder, r.pages[p as usize].vpn);
        }
    }

    #[test]
    fn a_scan_shifts_the_accessed_bits_of_the_open_regions_only() {
        let asid = Asid(0);
        let mut r = Regions::default();
        let a = r.page(asid, 1, Kind::Seed, Some(0));
        let b = r.page(asid, 2, Kind::Seed, Some(1));
        for _ in 0..10 {
            r.pages[a as usize].accessed = true;
            r.pages[b as usize].accessed = true;
            r.scan(asid, |g| g.cache == Some(0), |_| {});
        }
        assert_eq!(r.pages[a as usize].history, (1 << 10) - 1);
        // Page b's region was closed in the scanned view: untouched history.
        assert_eq!(r.pages[b as usize].history, 0);
        assert!(r.pages[b as usize].accessed);
        // 10 ones in 10 scans count as 32 in 32; b, never scanned, counts in full too.
        assert_eq!(r.working_set(r.pages[a as usize].region), 1.0);
        assert_eq!(r.working_set(r.pages[b as usize].region), 1.0);
        // 5 ones in 10 scans count as 16 (weight 1/2); 3 in 10 as 10 (1/4);
        // after 32 scans the history's own ones (here 12 of 32: 1/4).
        let page = &mut r.pages[a as usize];
        page.history = 0b10101_01010;
        assert_eq!(r.working_set(r.pages[a as usize].region), 0.5);
        r.pages[a as usize].history = 0b111;
        assert_eq!(r.working_set(r.pages[a as usize].region), 0.25);
        r.pages[a as usize].history = 0xfff;
        r.pages[a as usize].scans = 32;
        assert_eq!(r.working_set(r.pages[a as usize].region), 0.25);
    }

    #[test]
    fn a_history_keeps_its_width_of_scans_and_counts_their_share_of_32() {
        let asid = Asid(0);
        for (width, touched, scans, weight) in [(8, 10, 10, 1.0), (8, 4, 8, 0.5), (64, 40, 64, 0.75), (64, 12, 70, 0.0)]
        {
            let mut r = Regions::with_width(width);
            let a = r.page(asid, 1, Kind::Seed, Some(0));
            // The last `touched` of `scans` scans found it touched.
            for k in 0..scans {
                r.pages[a as usize].accessed = k >= scans - touched;
                r.scan(asid, |_| true, |_| {});
            }
            let page = r.pages[a as usize];
            assert_eq!(page.scans, width.min(scans as u8), "width {width}");
            assert_eq!(page.history.count_ones(), touched.min(width as u32), "width {width}");
            // 8 of 8 is 32 of 32; 4 of 8 is 16 (1/2); 40 of 64 is 20 (3/4); 12 of 64 is 6 (nothing).
            assert_eq!(r.working_set(page.region), weight, "width {width}");
        }
    }
}

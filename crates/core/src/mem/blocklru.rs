//! A fully associative LRU cache of blocks whose capacity can change while
//! it runs: a thin-provisioned VM's share of the hypervisor cache (seed
//! 004, part B1), grown and shrunk by the provisioning rules. Shrinking
//! evicts the least recently used blocks.

use crate::util::hash::U64Map;

/// No slot: the end of the recency list, or a block not held.
const NONE: u32 = u32::MAX;

/// The cache: slots on a doubly linked recency list, a map from block to slot.
#[derive(Debug, Default)]
pub struct BlockLru {
    /// Block -> its slot, or `NONE` once evicted (the map has no removal).
    slots: U64Map,
    block: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    free: Vec<u32>,
    /// Most and least recently used.
    head: u32,
    tail: u32,
    len: u64,
    capacity: u64,
}

impl BlockLru {
    pub fn new(capacity: u64) -> BlockLru {
        BlockLru { head: NONE, tail: NONE, capacity, ..BlockLru::default() }
    }

    /// Blocks held.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// An access to `block`: a hit moves it to the front; a miss installs
    /// it there (nothing with no capacity), evicting the least recently
    /// used when full. Returns whether it hit.
    pub fn access(&mut self, block: u64) -> bool {
        if let Some(slot) = self.slots.get(block).filter(|&s| s != NONE as u64) {
            let slot = slot as u32;
            self.unlink(slot);
            self.push_front(slot);
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        if self.len == self.capacity {
            self.evict();
        }
        let slot = match self.free.pop() {
            Some(s) => {
                self.block[s as usize] = block;
                s
            }
            None => {
                self.block.push(block);
                self.prev.push(NONE);
                self.next.push(NONE);
                (self.block.len() - 1) as u32
            }
        };
        self.slots.insert(block, slot as u64);
        self.push_front(slot);
        self.len += 1;
        false
    }

    /// Change the capacity, evicting the least recently used blocks beyond it.
    pub fn resize(&mut self, capacity: u64) {
        self.capacity = capacity;
        while self.len > capacity {
            self.evict();
        }
    }

    fn evict(&mut self) {
        let slot = self.tail;
        self.unlink(slot);
        self.slots.insert(self.block[slot as usize], NONE as u64);
        self.free.push(slot);
        self.len -= 1;
    }

    fn unlink(&mut self, slot: u32) {
        let (p, n) = (self.prev[slot as usize], self.next[slot as usize]);
        match p {
            NONE => self.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NONE => self.tail = p,
            n => self.prev[n as usize] = p,
        }
    }

    fn push_front(&mut self, slot: u32) {
        self.prev[slot as usize] = NONE;
        self.next[slot as usize] = self.head;
        match self.head {
            NONE => self.tail = slot,
            h => self.prev[h as usize] = slot,
        }
        self.head = slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same cache written plainly: a list, most recent last.
    fn plain(capacity: usize, blocks: &[u64], resize_at: Option<(usize, usize)>) -> Vec<bool> {
        let (mut list, mut cap) = (Vec::<u64>::new(), capacity);
        let mut out = Vec::new();
        for (i, &b) in blocks.iter().enumerate() {
            if let Some((_, c)) = resize_at.filter(|&(at, _)| at == i) {
                cap = c;
                while list.len() > cap {
                    list.remove(0);
                }
            }
            let hit = list.contains(&b);
            list.retain(|&x| x != b);
            if hit || cap > 0 {
                list.push(b);
            }
            if list.len() > cap {
                list.remove(0);
            }
            out.push(hit);
        }
        out
    }

    #[test]
    fn it_is_the_plain_lru_list_through_growing_and_shrinking() {
        let mut state = 7u64;
        let blocks: Vec<u64> = (0..3000)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) % 40
            })
            .collect();
        for (cap, at, new) in [(8, 1000, 20), (20, 1500, 3), (0, 10, 5), (5, 2000, 0)] {
            let mut c = BlockLru::new(cap as u64);
            let ours: Vec<bool> = blocks
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    if i == at {
                        c.resize(new as u64);
                    }
                    c.access(b)
                })
                .collect();
            assert_eq!(ours, plain(cap, &blocks, Some((at, new))), "capacity {cap} -> {new} at {at}");
            assert!(c.len() <= c.capacity());
        }
    }
}

//! Tournament trees of packed `u128` keys: the event queue's timers and the run queues' heads.
//!
//! Leaves hold keys (`u128::MAX` for none); every inner node holds the least key below it, so
//! the root (`t[1]`) is the least of all, an O(1) read, and a rewritten leaf is propagated in
//! one walk to the root, O(log leaves). Nodes are numbered as in a binary heap: node `i`'s
//! children are `2i` and `2i + 1`, the leaves are the second half of the slice (its length is
//! twice the leaves, a power of two), and index 0 is unused.
//!
//! The walk has a fixed length, the tree's height, and each level's minimum is a conditional
//! move, so nothing in it depends on which key is less (stopping where nothing changed saved
//! a few stores but cost a branch per level whose way is a coin toss: mispredicted). It goes
//! two levels a turn: the loop's own count and test, a fifth of a level's instructions, are
//! paid once per two levels.

/// Write `key` into leaf `leaf` (an index into `t`, in its second half) and recompute every
/// node above it: each the lesser of the child just written and its sibling.
#[inline(always)]
pub fn set_leaf(t: &mut [u128], leaf: usize, key: u128) {
    t[leaf] = key;
    debug_assert!(t.len().is_power_of_two() && leaf >= t.len() / 2);
    let mut i = leaf;
    let mut m = key;
    // SAFETY (every unchecked access below): `i < t.len()`, checked by the write above, and
    // `t.len()` is even, so the sibling `i ^ 1` and the parent `i / 2` are in bounds too
    while i > 3 {
        let s = unsafe { *t.get_unchecked(i ^ 1) };
        m = std::hint::select_unpredictable(s < m, s, m);
        let j = i / 2;
        unsafe { *t.get_unchecked_mut(j) = m };
        let s = unsafe { *t.get_unchecked(j ^ 1) };
        m = std::hint::select_unpredictable(s < m, s, m);
        i = j / 2;
        unsafe { *t.get_unchecked_mut(i) = m };
    }
    if i > 1 {
        let s = unsafe { *t.get_unchecked(i ^ 1) };
        m = std::hint::select_unpredictable(s < m, s, m);
        unsafe { *t.get_unchecked_mut(1) = m };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node is the least of its children after any sequence of writes, for trees of
    /// odd and even heights (the two-level turns and the last single level).
    #[test]
    fn every_node_is_the_least_below_it() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for leaves in [2usize, 4, 8, 16, 32, 64] {
            let mut t = vec![u128::MAX; 2 * leaves];
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let leaf = leaves + (x as usize) % leaves;
                let key = if x >> 60 == 0 { u128::MAX } else { u128::from(x >> 20) };
                set_leaf(&mut t, leaf, key);
                for i in 1..leaves {
                    assert_eq!(t[i], t[2 * i].min(t[2 * i + 1]), "{leaves} leaves, node {i}");
                }
            }
        }
    }
}

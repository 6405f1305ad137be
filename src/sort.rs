//! Stable sorting with one copy of the sort loop in the binary. Each `slice::sort_by`
//! call on a new element type or comparator compiles its own ~4.5 KiB driftsort
//! (issue 22: ~30 copies); these order indices through a `dyn` comparison instead,
//! so each call site adds only the comparator and a move of the elements. Same
//! order as `slice::sort_by` (stable). For the short lists of reports and probes,
//! not for hot paths. [`btree_map`] likewise builds a map without
//! `BTreeMap::from_iter`'s sort.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Sorts `v` stably by `cmp`, like `v.sort_by(cmp)`.
pub fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let order = stable_order(v.len(), &|a, b| cmp(&v[a], &v[b]));
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// Sorts `v` stably by a key, like `v.sort_by_key(key)`.
pub fn sort_by_key<T, K: Ord>(v: &mut Vec<T>, key: impl Fn(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `v` stably, like `v.sort()`.
pub fn sort<T: Ord>(v: &mut Vec<T>) {
    sort_by(v, T::cmp);
}

/// Builds a map by inserting each pair in turn (a later key replaces an earlier
/// one), like `pairs.collect::<BTreeMap<_, _>>()`. That `collect` sorts the pairs
/// first: a copy of the sort loop for each iterator type it is called with.
pub fn btree_map<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (k, v) in pairs {
        map.insert(k, v);
    }
    map
}

/// The indices `0..len` in stably sorted order: the one instantiation of the sort.
#[inline(never)]
fn stable_order(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..len).collect();
    idx.sort_by(|&a, &b| cmp(a, b));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_order_as_the_std_stable_sort_ties_included() {
        // (key, original position): ties on the key must keep their input order.
        let input: Vec<(u32, usize)> = [5, 1, 3, 1, 5, 0, 3, 3, 9, 1, 0, 7]
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        let mut ours = input.clone();
        sort_by_key(&mut ours, |p| p.0);
        let mut std_sorted = input.clone();
        std_sorted.sort_by_key(|p| p.0);
        assert_eq!(ours, std_sorted);
        assert_eq!(&ours[..3], &[(0, 5), (0, 10), (1, 1)]);

        let mut desc = input.clone();
        sort_by(&mut desc, |a, b| b.0.cmp(&a.0));
        assert_eq!(desc[0], (9, 8));
        assert_eq!(&desc[1..3], &[(7, 11), (5, 0)]);

        let mut words = vec!["b".to_string(), "a".into(), "c".into(), "a".into()];
        sort(&mut words);
        assert_eq!(words, ["a", "a", "b", "c"]);
        let mut empty: Vec<String> = Vec::new();
        sort(&mut empty);
        assert!(empty.is_empty());

        let pairs = [("b", 1), ("a", 2), ("b", 3)];
        let map = btree_map(pairs);
        assert_eq!(map, pairs.into_iter().collect::<BTreeMap<_, _>>());
        assert_eq!(map["b"], 3, "the later value wins, as with collect");
    }
}

//! Reservoir sampling (Vitter 1985, "Random Sampling with a Reservoir", Algorithm R).
//!
//! ARMAC keeps past policy snapshots in a reservoir so that "a mixture of past policies" can be
//! replayed without storing every epoch (section 3.1: "reservoir sampling with buffer of size
//! of 1024 was used to prune past policies"; Algorithm 1 samples `j ~ Unif({0, …, t−1})`, which
//! the reservoir approximates by a uniform draw from a uniform sample of the past).
//!
//! After `n` pushes into a reservoir of capacity `k`, every pushed item is present with
//! probability `min(1, k / n)`, independently of when it was pushed. Algorithm R: the first `k`
//! items are kept; item number `n > k` replaces a uniformly chosen slot with probability `k / n`
//! and is dropped otherwise.

use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

/// Capacity of ARMAC's past-network reservoir (section 3.1).
pub const DEFAULT_RESERVOIR_CAPACITY: usize = 1024;

/// A uniform sample of at most `capacity` items out of everything ever pushed.
///
/// The whole state (capacity, number of items seen, the items in slot order) is serialisable,
/// so a checkpointed reservoir resumes exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservoir<T> {
    capacity: usize,
    seen: u64,
    items: Vec<T>,
}

/// What [`Reservoir::offer`] did with an item.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer<T> {
    /// Kept in a free slot.
    Added,
    /// Kept in place of this old item.
    Replaced(T),
    /// Not admitted (the item itself).
    Dropped(T),
}

impl<T> Default for Reservoir<T> {
    /// An empty reservoir of [`DEFAULT_RESERVOIR_CAPACITY`].
    fn default() -> Self {
        Reservoir::new(DEFAULT_RESERVOIR_CAPACITY)
    }
}

impl<T> Reservoir<T> {
    /// An empty reservoir holding at most `capacity` items.
    ///
    /// # Panics
    /// If `capacity == 0`.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "reservoir capacity must be positive");
        Reservoir {
            capacity,
            seen: 0,
            items: Vec::with_capacity(capacity.min(4096)),
        }
    }

    /// Offers `item` (Algorithm R). Returns the item that is *not* in the reservoir as a result
    /// of this push, so the caller can release what it stands for (e.g. delete a snapshot
    /// file): `None` while the reservoir is filling up, otherwise either the replaced old item
    /// (the new one was admitted) or `item` itself (it was not admitted).
    pub fn push(&mut self, item: T, rng: &mut SplitMix64) -> Option<T> {
        match self.offer(item, rng) {
            Offer::Added => None,
            Offer::Replaced(old) | Offer::Dropped(old) => Some(old),
        }
    }

    /// [`Self::push`] saying what happened: the item was added to a reservoir still filling
    /// up, replaced an old item (returned), or was not admitted (returned).
    pub fn offer(&mut self, item: T, rng: &mut SplitMix64) -> Offer<T> {
        self.offer_slot(item, rng).0
    }

    /// [`Self::offer`], also saying which slot now holds the item (`None` when it was not
    /// admitted).
    pub fn offer_slot(&mut self, item: T, rng: &mut SplitMix64) -> (Offer<T>, Option<usize>) {
        self.seen += 1;
        if self.items.len() < self.capacity {
            self.items.push(item);
            return (Offer::Added, Some(self.items.len() - 1));
        }
        let j = below_u64(rng, self.seen);
        if j < self.capacity as u64 {
            let j = j as usize;
            let old = std::mem::replace(&mut self.items[j], item);
            (Offer::Replaced(old), Some(j))
        } else {
            (Offer::Dropped(item), None)
        }
    }

    /// A uniformly drawn item, `None` when empty.
    pub fn sample_uniform(&self, rng: &mut SplitMix64) -> Option<&T> {
        self.sample_slot(rng).map(|i| &self.items[i])
    }

    /// The slot of a uniformly drawn item (the draw [`Self::sample_uniform`] makes), `None`
    /// when empty.
    pub fn sample_slot(&self, rng: &mut SplitMix64) -> Option<usize> {
        (!self.items.is_empty()).then(|| rng.below(self.items.len()))
    }

    /// Number of items held (at most the capacity).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// `true` when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The maximum number of items held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of items ever pushed.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The items held, in slot order (not push order).
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Mutable access to the held items (e.g. to update a path after moving files).
    pub fn items_mut(&mut self) -> &mut [T] {
        &mut self.items
    }

    /// Rebuilds a reservoir from its parts (e.g. a hand-written checkpoint).
    ///
    /// # Errors
    /// If `capacity == 0`, there are more items than the capacity, or fewer items than
    /// `min(seen, capacity)`.
    pub fn from_parts(capacity: usize, seen: u64, items: Vec<T>) -> Result<Self, String> {
        if capacity == 0 {
            return Err("reservoir capacity must be positive".into());
        }
        if items.len() > capacity {
            return Err(format!(
                "reservoir holds {} items but its capacity is {capacity}",
                items.len()
            ));
        }
        if items.len() as u64 != seen.min(capacity as u64) {
            return Err(format!(
                "reservoir has seen {seen} items with capacity {capacity} but holds {}",
                items.len()
            ));
        }
        Ok(Reservoir {
            capacity,
            seen,
            items,
        })
    }
}

/// Uniform in `0..n` for `n > 0` (`n` may exceed `usize` on 32-bit targets).
fn below_u64(rng: &mut SplitMix64, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_then_reports_what_left() {
        let mut r = Reservoir::new(3);
        let mut rng = SplitMix64::new(1);
        for i in 0..3 {
            assert_eq!(r.push(i, &mut rng), None);
        }
        assert_eq!(r.items(), &[0, 1, 2]);
        for i in 3..100 {
            let before: Vec<i32> = r.items().to_vec();
            let out = r.push(i, &mut rng).expect("full reservoir always reports");
            let mut now: Vec<i32> = r.items().to_vec();
            // What came back plus what is held is exactly what was held plus the new item.
            now.push(out);
            now.sort();
            let mut expect = before.clone();
            expect.push(i);
            expect.sort();
            assert_eq!(now, expect);
            assert_eq!(r.len(), 3);
        }
        assert_eq!(r.seen(), 100);
    }

    /// After pushing `N ≫ k` items, item `i` is held with probability `k / N`. Over `TRIALS`
    /// independent seeded runs its inclusion count is Binomial(TRIALS, k/N); every count must
    /// lie within 5 standard deviations (a false alarm over all items has probability < 1e-4,
    /// and the seeds are fixed), and the chi-square statistic over items must be near its mean.
    #[test]
    fn inclusion_is_uniform() {
        const K: usize = 16;
        const N: usize = 400;
        const TRIALS: usize = 20_000;
        let mut counts = vec![0u64; N];
        for trial in 0..TRIALS {
            let mut rng = SplitMix64::new(0xA11CE + trial as u64);
            let mut r = Reservoir::new(K);
            for i in 0..N {
                r.push(i, &mut rng);
            }
            assert_eq!(r.len(), K);
            for &i in r.items() {
                counts[i] += 1;
            }
        }
        let p = K as f64 / N as f64;
        let mean = TRIALS as f64 * p;
        let sd = (TRIALS as f64 * p * (1.0 - p)).sqrt();
        let mut chi2 = 0.0;
        for (i, &c) in counts.iter().enumerate() {
            let z = (c as f64 - mean) / sd;
            assert!(
                z.abs() < 5.0,
                "item {i}: {c} inclusions, expected {mean:.0} ± {sd:.1}"
            );
            chi2 += (c as f64 - mean).powi(2) / mean;
        }
        // Each count has variance TRIALS·p·(1 − p), so E[chi2] = N·(1 − p) exactly; allow six
        // standard deviations of a chi-square with N degrees of freedom.
        let expect = N as f64 * (1.0 - p);
        assert!(
            (chi2 - expect).abs() < 6.0 * (2.0 * N as f64).sqrt(),
            "chi-square {chi2:.1}, expected about {expect:.1}"
        );
        // Early and late items are treated alike.
        let first: u64 = counts[..N / 4].iter().sum();
        let last: u64 = counts[3 * N / 4..].iter().sum();
        let quarter = mean * (N / 4) as f64;
        assert!((first as f64 - quarter).abs() < 0.02 * quarter);
        assert!((last as f64 - quarter).abs() < 0.02 * quarter);
    }

    #[test]
    fn sample_uniform_is_uniform_over_held_items() {
        let mut rng = SplitMix64::new(7);
        let mut r = Reservoir::new(8);
        assert!(r.sample_uniform(&mut rng).is_none());
        for i in 0..8 {
            r.push(i, &mut rng);
        }
        let draws = 80_000;
        let mut counts = [0u32; 8];
        for _ in 0..draws {
            counts[*r.sample_uniform(&mut rng).unwrap()] += 1;
        }
        let mean = draws as f64 / 8.0;
        let sd = (draws as f64 * (1.0 / 8.0) * (7.0 / 8.0)).sqrt();
        for c in counts {
            assert!((c as f64 - mean).abs() < 5.0 * sd, "{counts:?}");
        }
    }

    #[test]
    fn serde_round_trip_resumes_identically() {
        let mut rng = SplitMix64::new(3);
        let mut r: Reservoir<String> = Reservoir::new(5);
        for i in 0..20 {
            r.push(format!("snap_{i}"), &mut rng);
        }
        let json = serde_json::to_string(&r).unwrap();
        let mut back: Reservoir<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let (mut a, mut b) = (rng.clone(), rng);
        for i in 20..40 {
            assert_eq!(
                r.push(format!("snap_{i}"), &mut a),
                back.push(format!("snap_{i}"), &mut b)
            );
        }
        assert_eq!(back, r);
    }

    #[test]
    fn defaults_and_parts() {
        let r: Reservoir<u32> = Reservoir::default();
        assert_eq!(r.capacity(), DEFAULT_RESERVOIR_CAPACITY);
        assert!(r.is_empty());
        assert!(Reservoir::from_parts(2, 5, vec![1, 2]).is_ok());
        assert!(Reservoir::from_parts(2, 5, vec![1]).is_err());
        assert!(Reservoir::from_parts(2, 1, vec![1, 2]).is_err());
        assert!(Reservoir::<u8>::from_parts(0, 0, vec![]).is_err());
    }
}

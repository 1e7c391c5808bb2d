//! The past epochs ARMAC's actors draw from during one epoch, when the reservoir of past
//! networks is larger than the memory set aside for them.
//!
//! Algorithm 1 draws a past epoch `j` uniformly from the reservoir. Holding every reservoir
//! network in memory costs `2 · capacity` networks (`θ^j` for `π^j`, `θ^{j+1}` for its critic),
//! which a long Hold'em run cannot afford. The actors therefore draw `j` uniformly from a
//! *working set*: the whole reservoir while it fits the budget (then nothing changes against
//! drawing from the reservoir), otherwise a uniform subset of `capacity` epochs that rotates:
//! after every epoch the members the reservoir evicted leave, `refresh` further members chosen
//! at random are swapped for random non-members, and the set is filled up again. The rotation is
//! symmetric in the reservoir's items, so in the long run every reservoir item is a member for
//! the same share of epochs and the marginal distribution of `j` over many epochs is the
//! reservoir's uniform one; within one epoch the draws come from `capacity` items only. Only the
//! incoming members' networks are read from disk, a few per epoch, so acting never waits on a
//! cache miss.

use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

/// The past epochs held in memory for the actors (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkingSet {
    epochs: Vec<u64>,
}

impl WorkingSet {
    /// The members, in the order the actors index them.
    pub fn epochs(&self) -> &[u64] {
        &self.epochs
    }

    /// Brings the set up to date with the reservoir's `items`: members the reservoir no longer
    /// holds leave; while the reservoir fits `capacity`, the set is the reservoir (in its order);
    /// otherwise `refresh` random members are swapped for random non-members and the set is
    /// filled up to `capacity` with random non-members.
    pub fn update(&mut self, items: &[u64], capacity: usize, refresh: usize, rng: &mut SplitMix64) {
        if items.len() <= capacity {
            self.epochs = items.to_vec();
            return;
        }
        let held: std::collections::HashSet<u64> = items.iter().copied().collect();
        self.epochs.retain(|e| held.contains(e));
        self.epochs.truncate(capacity);
        let mut members: std::collections::HashSet<u64> = self.epochs.iter().copied().collect();
        // Swapping out first and filling up afterwards lets a swapped-out item be drawn back in,
        // as a symmetric random swap must.
        for _ in 0..refresh.min(self.epochs.len()) {
            let k = rng.below(self.epochs.len());
            members.remove(&self.epochs.swap_remove(k));
        }
        let mut outside: Vec<u64> = items
            .iter()
            .copied()
            .filter(|e| !members.contains(e))
            .collect();
        while self.epochs.len() < capacity && !outside.is_empty() {
            let k = rng.below(outside.len());
            let e = outside.swap_remove(k);
            members.insert(e);
            self.epochs.push(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_reservoir_while_it_fits() {
        let mut ws = WorkingSet::default();
        let mut rng = SplitMix64::new(1);
        ws.update(&[4, 1, 7], 3, 2, &mut rng);
        assert_eq!(ws.epochs(), &[4, 1, 7]);
        ws.update(&[4, 9, 7], 5, 2, &mut rng);
        assert_eq!(ws.epochs(), &[4, 9, 7]);
    }

    #[test]
    fn rotates_within_capacity_and_drops_evicted_members() {
        let mut ws = WorkingSet::default();
        let mut rng = SplitMix64::new(2);
        let items: Vec<u64> = (0..100).collect();
        ws.update(&items, 10, 2, &mut rng);
        assert_eq!(ws.epochs().len(), 10);
        let before: std::collections::HashSet<u64> = ws.epochs().iter().copied().collect();
        // Evict two members from the reservoir: they leave, and the set stays full and distinct.
        let gone: Vec<u64> = ws.epochs()[..2].to_vec();
        let items2: Vec<u64> = items
            .iter()
            .copied()
            .filter(|e| !gone.contains(e))
            .collect();
        ws.update(&items2, 10, 2, &mut rng);
        let after: std::collections::HashSet<u64> = ws.epochs().iter().copied().collect();
        assert_eq!(after.len(), 10, "members are distinct");
        assert!(gone.iter().all(|g| !after.contains(g)));
        assert!(after.iter().all(|e| items2.contains(e)));
        // At most the 2 evicted + 2 refreshed members changed.
        assert!(before.intersection(&after).count() >= 6);
    }

    /// Over many epochs every reservoir item is a member for about the same share of epochs:
    /// the draws of `j` are uniform over the reservoir in the long run.
    #[test]
    fn membership_is_uniform_in_the_long_run() {
        let mut ws = WorkingSet::default();
        let mut rng = SplitMix64::new(3);
        let items: Vec<u64> = (0..64).collect();
        let mut count = [0u64; 64];
        let rounds = 200_000;
        for _ in 0..rounds {
            ws.update(&items, 8, 1, &mut rng);
            for &e in ws.epochs() {
                count[e as usize] += 1;
            }
        }
        let expected = rounds as f64 * 8.0 / 64.0;
        for (e, &c) in count.iter().enumerate() {
            let dev = (c as f64 - expected).abs() / expected;
            assert!(
                dev < 0.06,
                "item {e}: {c} memberships, expected {expected:.0}"
            );
        }
    }
}

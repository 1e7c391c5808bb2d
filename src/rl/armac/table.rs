//! A policy held as a table over information states (the `tabular_w` ablation).
//!
//! With `armac.tabular_w = true` the actors do not read `π^t` from the mean-regret head: the
//! learner builds, at the start of every epoch, regret matching on the reservoir's
//! per-information-state weighted means of the mean-regret targets, which is what a head of
//! unlimited capacity fitted exactly to the same data would play. Comparing such a run with one
//! that reads the head separates the error of the data (critic, sampling, weights) from the
//! error of the fit. The table replaces the head's rows in the actors' network outputs, so every
//! other part of an episode (critic values, `v_j`, the average-policy targets) runs unchanged.

use crate::nn::armac::ActOutput;
use std::collections::HashMap;

/// Player `p`'s policy at each of its information states, keyed by the bits of its
/// information-state tensor; probabilities indexed by action id (0 at illegal actions).
#[derive(Clone, Debug, Default)]
pub struct PolicyTable {
    maps: [HashMap<Vec<u32>, Vec<f32>>; 2],
}

fn key(own: &[f32]) -> Vec<u32> {
    own.iter().map(|x| x.to_bits()).collect()
}

impl PolicyTable {
    /// Sets player `player`'s policy at the information state with tensor `own`.
    pub fn insert(&mut self, player: usize, own: &[f32], probs: Vec<f32>) {
        self.maps[player].insert(key(own), probs);
    }

    /// Player `player`'s policy at the information state with tensor `own`, if held.
    pub fn get(&self, player: usize, own: &[f32]) -> Option<&[f32]> {
        self.maps[player].get(&key(own)).map(Vec::as_slice)
    }

    /// Information states held, both players.
    pub fn len(&self) -> usize {
        self.maps[0].len() + self.maps[1].len()
    }

    /// Whether no information state is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the mean-regret rows of `out` by the table's policies: row `r` is player
    /// `players[r]`'s information state with tensor `own[r * size..(r + 1) * size]`. A
    /// probability vector is its own `NormalizedReLU`, so readers of the head see the table's
    /// policy. A state the table lacks gets zeros (uniform after `NormalizedReLU`).
    pub fn overlay(&self, out: &mut ActOutput, own: &[f32], players: &[usize]) {
        let na = out.num_actions;
        let size = own.len() / out.rows.max(1);
        for (r, &p) in players.iter().enumerate().take(out.rows) {
            let row = &mut out.mean_regret[r * na..(r + 1) * na];
            match self.get(p, &own[r * size..(r + 1) * size]) {
                Some(probs) => row.copy_from_slice(probs),
                None => row.fill(0.0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::probs::normalized_relu;

    #[test]
    fn overlay_replaces_the_head_rows_by_player_and_tensor() {
        let mut t = PolicyTable::default();
        // The same tensor for both players must stay two states.
        t.insert(0, &[1.0, 0.0], vec![0.25, 0.75, 0.0]);
        t.insert(1, &[1.0, 0.0], vec![0.0, 0.5, 0.5]);
        assert_eq!(t.len(), 2);
        let mut out = ActOutput {
            rows: 3,
            num_actions: 3,
            q0: vec![0.0; 9],
            q1: vec![0.0; 9],
            mean_regret: vec![9.0; 9],
            immediate_regret: vec![0.0; 9],
            avg_policy: vec![0.0; 9],
        };
        let own = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0];
        t.overlay(&mut out, &own, &[0, 1, 0]);
        assert_eq!(&out.mean_regret[0..3], &[0.25, 0.75, 0.0]);
        assert_eq!(&out.mean_regret[3..6], &[0.0, 0.5, 0.5]);
        // Unknown state: zeros, which regret matching plays uniformly.
        assert_eq!(&out.mean_regret[6..9], &[0.0, 0.0, 0.0]);
        let legal = [true, true, false];
        assert_eq!(
            normalized_relu(&out.mean_regret[0..3], &legal),
            vec![0.25, 0.75, 0.0]
        );
        assert_eq!(
            normalized_relu(&out.mean_regret[6..9], &legal),
            vec![0.5, 0.5, 0.0]
        );
    }
}

//! The CFR-D re-solving gadget at the search root.

use super::super::SearchError;
use crate::game::Player;

/// The CFR-D re-solving gadget at the root (see the [`crate::search::engine`] docs).
#[derive(Clone, Debug)]
pub struct Gadget {
    pub(super) player: Player,
    pub(super) cfvs: Vec<f64>,
    prev: Vec<f64>,
    alpha: f64,
    /// Per root slot: regrets of (follow, terminate).
    regrets: Vec<[f64; 2]>,
}

impl Gadget {
    /// A gadget for opponent `player` with terminate values `cfvs` and previous range `prev`
    /// (both one entry per root slot), mixing weight `alpha` in `[0, 1]`.
    pub fn new(
        player: Player,
        cfvs: Vec<f64>,
        prev: Vec<f64>,
        alpha: f64,
    ) -> Result<Gadget, SearchError> {
        if !(0.0..=1.0).contains(&alpha) {
            return Err(SearchError::BadSetting {
                key: "alpha",
                value: alpha.to_string(),
                reason: "must lie in [0, 1]".into(),
            });
        }
        if player > 1 || cfvs.len() != prev.len() || cfvs.iter().any(|v| !v.is_finite()) {
            return Err(SearchError::BadRange {
                player,
                reason: format!(
                    "gadget needs finite values and a previous range of equal length ({} vs {})",
                    cfvs.len(),
                    prev.len()
                ),
            });
        }
        let n = cfvs.len();
        Ok(Gadget {
            player,
            cfvs,
            prev,
            alpha,
            regrets: vec![[0.0; 2]; n],
        })
    }

    /// The terminate values, one per root slot.
    pub fn terminate_values(&self) -> &[f64] {
        &self.cfvs
    }

    /// The opponent whose range the gadget sets.
    pub fn player(&self) -> Player {
        self.player
    }

    /// Probability of *follow* per root slot (½ where neither option has positive regret).
    pub fn follow(&self) -> Vec<f64> {
        self.regrets
            .iter()
            .map(|r| {
                let (f, t) = (r[0].max(0.0), r[1].max(0.0));
                if f + t > 0.0 { f / (f + t) } else { 0.5 }
            })
            .collect()
    }

    /// The opponent's root range: `α · follow + (1 − α) · r_prev`.
    pub fn range(&self) -> Vec<f64> {
        self.follow()
            .iter()
            .zip(&self.prev)
            .map(|(f, r)| self.alpha * f + (1.0 - self.alpha) * r)
            .collect()
    }

    /// Regret-matching+ step from the opponent's root counterfactual values of following.
    pub fn update(&mut self, follow_values: &[f64]) {
        let pf = self.follow();
        for (k, r) in self.regrets.iter_mut().enumerate() {
            let (vf, vt) = (follow_values[k], self.cfvs[k]);
            let u = pf[k] * vf + (1.0 - pf[k]) * vt;
            r[0] = (r[0] + vf - u).max(0.0);
            r[1] = (r[1] + vt - u).max(0.0);
        }
    }
}

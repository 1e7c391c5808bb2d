//! A Student of Games value network (CVPN) as a value estimate for AIVAT
//! ([`crate::eval::aivat::ValueEstimate`]).
//!
//! The CVPN reads a public state and both players' ranges and returns each player's value of
//! each of their hands against the other's range (normalised by the opponent's mass). In a
//! played hand both hands are known, so the ranges are one hand each: player 0's output for
//! its own hand is then the network's value of the history for player 0. That is a query the
//! network rarely met in training (its ranges were the search's beliefs), so the estimate is
//! rough; AIVAT stays unbiased whatever the estimate, and terminals and all-in run-outs are
//! valued exactly by AIVAT itself.

use crate::eval::aivat::ValueEstimate;
use crate::game::{Game, State, Turn};
use crate::games::universal_poker::UniversalPokerGame;
use crate::nn::cvpn::{CvpnForward, CvpnSnapshot};
use crate::policy::PolicyError;
use std::collections::HashMap;
use std::sync::Arc;

/// The CVPN of a Student of Games model on a Hold'em game (module docs).
pub struct CvpnValues {
    net: Arc<CvpnSnapshot>,
    /// The layout position of each hole-card index (the network's hand order).
    position: HashMap<u32, usize>,
    public_size: usize,
    /// The network's values are divided by this (the game's largest utility).
    scale: f64,
    name: String,
}

impl CvpnValues {
    /// The estimate of `net` on `game`, whose hands are in the order of `hole_index` (a
    /// layout's hands, as the network was trained on them); `name` names it in reports.
    pub fn new(
        net: Arc<CvpnSnapshot>,
        game: &UniversalPokerGame,
        hole_index: &[u32],
        name: String,
    ) -> Self {
        let cfg = game.config();
        CvpnValues {
            net,
            position: hole_index
                .iter()
                .enumerate()
                .map(|(x, &h)| (h, x))
                .collect(),
            public_size: game.public_state_tensor_size(),
            scale: cfg.max_utility.abs().max(cfg.min_utility.abs()).max(1e-9),
            name,
        }
    }
}

impl ValueEstimate for CvpnValues {
    fn values(&self, states: &[&dyn State]) -> Result<Vec<f64>, PolicyError> {
        let p = self.net.config().private_states;
        let fail = |reason: String| PolicyError::Failed {
            policy: self.name.clone(),
            reason,
        };
        let mut input = Vec::with_capacity(states.len() * (self.public_size + 2 * p));
        let mut own = Vec::with_capacity(states.len());
        let mut public = vec![0.0; self.public_size];
        for s in states {
            if !matches!(s.turn(), Turn::Player(_)) {
                return Err(PolicyError::NotADecision);
            }
            s.public_state_tensor(&mut public);
            input.extend_from_slice(&public);
            for player in 0..2 {
                let hole = s.private_state(player) as u32;
                let x = *self
                    .position
                    .get(&hole)
                    .ok_or_else(|| fail(format!("hand {hole} is not in the network's hands")))?;
                let mut range = vec![0.0f32; p];
                range[x] = 1.0;
                input.extend(range);
                if player == 0 {
                    own.push(x);
                }
            }
        }
        let out = self
            .net
            .predict_values(&input)
            .map_err(|e| fail(e.to_string()))?;
        Ok(own
            .iter()
            .enumerate()
            .map(|(r, &x)| f64::from(out[r * 2 * p + x]) * self.scale)
            .collect())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

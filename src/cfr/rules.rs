//! The vocabulary every CFR-family solver shares: how cumulative regrets are transformed
//! ([`RegretRule`]), how iterations are weighted in the average strategy ([`Averaging`]) and
//! whether the players update in turn or together ([`Updates`]).

use serde::{Deserialize, Serialize};

/// How cumulative regrets are transformed after each update.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum RegretRule {
    /// Plain sums (CFR). Config name `plain`.
    #[serde(alias = "plain")]
    Plain,
    /// Clamped at zero after every update (regret matching+, CFR+). Config name `plus`.
    #[serde(alias = "plus")]
    Plus,
    /// Multiplied by `t^α/(t^α+1)` where non-negative and `t^β/(t^β+1)` where negative.
    Discounted { alpha: f64, beta: f64 },
}

impl RegretRule {
    /// Transforms cumulative regrets in place after the update of iteration `t` (counted from
    /// 1): nothing (plain), clamp at zero (plus), or DCFR's discounts.
    pub fn apply(self, regrets: &mut [f64], t: f64) {
        match self {
            RegretRule::Plain => {}
            RegretRule::Plus => regrets.iter_mut().for_each(|r| *r = r.max(0.0)),
            RegretRule::Discounted { alpha, beta } => {
                let (ta, tb) = (t.powf(alpha), t.powf(beta));
                let (dp, dn) = (ta / (ta + 1.0), tb / (tb + 1.0));
                regrets
                    .iter_mut()
                    .for_each(|r| *r *= if *r >= 0.0 { dp } else { dn });
            }
        }
    }
}

/// Weight `w_t` of iteration `t` in the average strategy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Averaging {
    /// `w_t = 1`.
    Uniform,
    /// `w_t = t`.
    Linear,
    /// `w_t = t^γ`.
    Power(f64),
}

impl Averaging {
    /// The weight `w_t` of iteration `t` (counted from 1).
    pub fn weight(self, t: f64) -> f64 {
        match self {
            Averaging::Uniform => 1.0,
            Averaging::Linear => t,
            Averaging::Power(gamma) => t.powf(gamma),
        }
    }
}

/// Alternating or simultaneous regret updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Updates {
    Alternating,
    Simultaneous,
}

impl Updates {
    /// The turns of one iteration, in order, each as the players it updates: player 0's, then
    /// player 1's (alternating: player 1's update sees player 0's new strategy), or both
    /// players' at once (simultaneous: both updates see the same strategies).
    pub fn turns(self) -> &'static [[bool; 2]] {
        match self {
            Updates::Alternating => &[[true, false], [false, true]],
            Updates::Simultaneous => &[[true, true]],
        }
    }
}

/// The schedule of one CFR iteration, shared by every solver that runs CFR iterations: its
/// number, the weight of its average-policy increments and its turns. A solver runs each turn
/// from the strategies as they stand when the turn begins: it evaluates the turn's
/// [`Iteration::updating`] players, then updates them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Iteration {
    /// Counted from 1.
    pub t: u64,
    /// `w_t` ([`Averaging::weight`] of `t`).
    pub weight: f64,
    /// [`Updates::turns`].
    pub turns: &'static [[bool; 2]],
}

impl Iteration {
    /// Iteration `t` (counted from 1) under `updates` and `averaging`.
    pub fn new(t: u64, updates: Updates, averaging: Averaging) -> Iteration {
        Iteration {
            t,
            weight: averaging.weight(t as f64),
            turns: updates.turns(),
        }
    }

    /// Player `p`'s turn alone, as search engines run alternating updates one player at a time
    /// when `done` iterations are counted: player 0's turn begins iteration `done + 1` (and
    /// counts it), player 1's belongs to the iteration counted last (the first one before any
    /// is counted).
    pub fn single(done: &mut u64, p: usize, averaging: Averaging) -> Iteration {
        if p == 0 {
            *done += 1;
        }
        let t = (*done).max(1);
        Iteration {
            t,
            weight: averaging.weight(t as f64),
            turns: &Updates::Alternating.turns()[p..=p],
        }
    }

    /// The players a turn updates, in increasing order.
    pub fn updating(turn: [bool; 2]) -> impl Iterator<Item = usize> + Clone {
        (0..2).filter(move |&p| turn[p])
    }
}

#[cfg(test)]
mod tests {
    use super::{Averaging, Iteration, Updates};

    #[test]
    fn single_turns_count_iterations_at_player_0() {
        let mut done = 0;
        let first = Iteration::single(&mut done, 1, Averaging::Linear);
        assert_eq!((first.t, first.turns), (1, &[[false, true]][..]));
        assert_eq!(done, 0, "player 1 alone counts no iteration");
        let a = Iteration::single(&mut done, 0, Averaging::Linear);
        let b = Iteration::single(&mut done, 1, Averaging::Linear);
        assert_eq!((a.t, b.t, done), (1, 1, 1));
        assert_eq!(a.turns, &[[true, false]][..]);
        assert_eq!(a.weight, Averaging::Linear.weight(1.0));
        let c = Iteration::single(&mut done, 0, Averaging::Linear);
        assert_eq!((c.t, c.weight, done), (2, Averaging::Linear.weight(2.0), 2));
    }

    #[test]
    fn the_schedule_orders_turns_and_weights_iterations() {
        let alt = Iteration::new(3, Updates::Alternating, Averaging::Linear);
        assert_eq!(alt.t, 3);
        assert_eq!(alt.weight, 3.0);
        let players: Vec<Vec<usize>> = alt
            .turns
            .iter()
            .map(|&turn| Iteration::updating(turn).collect())
            .collect();
        assert_eq!(players, [vec![0], vec![1]]);
        let sim = Iteration::new(4, Updates::Simultaneous, Averaging::Power(1.5));
        assert_eq!(sim.weight, 4f64.powf(1.5));
        let players: Vec<Vec<usize>> = sim
            .turns
            .iter()
            .map(|&turn| Iteration::updating(turn).collect())
            .collect();
        assert_eq!(players, [vec![0, 1]]);
        assert_eq!(
            Iteration::new(7, Updates::Simultaneous, Averaging::Uniform).weight,
            1.0
        );
    }
}

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

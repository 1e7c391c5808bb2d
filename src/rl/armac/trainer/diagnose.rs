//! The exact diagnostics of an epoch ([`ArmacTrainer::diagnose`], `armac.diagnostics`).

use super::{ArmacTrainer, ScalarSink, current_policy};
use crate::nn::armac::ArmacPolicyNet;
use crate::rl::armac::diagnostics::{DiagnosticsRow, critic_error, exact_critic};
use crate::rl::armac::settings::reward_scale;
use crate::rl::error::TrainError;

impl ArmacTrainer {
    /// The exact diagnostics of the policy of `net` (the network the epoch ended with) against
    /// the previous epoch's; with `eval_now` also the sampled-regret and critic errors.
    pub(super) fn diagnose(
        &mut self,
        net: &ArmacPolicyNet,
        eval_now: bool,
        tb: &mut dyn ScalarSink,
    ) -> Result<DiagnosticsRow, TrainError> {
        let (Some(ex), Some(d)) = (&self.exact, &mut self.diag) else {
            return Ok(DiagnosticsRow::missing());
        };
        let (game, s, na, it) = (&self.game, &self.s, self.na, self.state.epoch);
        let next = current_policy(ex, self.tabular.as_ref(), net, it, na);
        let sampled = eval_now
            .then(|| ex.sampled_regrets(&self.replay, self.memory.as_ref(), na))
            .flatten();
        let mut row = d.compare(&ex.tree, &next, eval_now, sampled.as_ref());
        // The critic of θ^{t+1} was trained towards π^t (the policy of the epoch that just
        // ended, recorded last) and evaluates π^t's advantages for the actors (`PastEpoch`),
        // so it is scored against π^t's exact values, not against π^{t+1}'s.
        if eval_now
            && let Some(pi_t) = d.last()
            && let Some(q) = ex.critic_q(game, net, na, reward_scale(game, s))?
        {
            let ht = ex.histories(game)?;
            let e = critic_error(&ht, &ex.tree, pi_t, &q);
            row.critic_rmse = e.rmse;
            row.critic_wrong_sign = e.wrong_sign;
            row.critic_wrong_mass = e.wrong_mass;
            row.critic_adv_rmse = e.adv_rmse;
            tb.scalar("diag/critic_adv_rmse", e.adv_rmse, it);
            tb.scalar("diag/critic_rmse", e.rmse, it);
            tb.scalar("diag/critic_wrong_sign", e.wrong_sign, it);
            tb.scalar("diag/critic_wrong_mass", e.wrong_mass, it);
            let moved = exact_critic(&ht, &ex.tree, &next);
            row.critic_drift = critic_error(&ht, &ex.tree, pi_t, &moved).rmse;
            tb.scalar("diag/critic_drift", row.critic_drift, it);
        }
        d.record(&ex.tree, &next);
        tb.scalar("diag/policy_change", row.policy_change, it);
        tb.scalar("diag/w_error", row.w_error, it);
        if eval_now {
            tb.scalar("diag/nash_conv_exact_rm", row.nash_conv_exact_rm, it);
            tb.scalar("diag/nash_conv_exact_avg", row.nash_conv_exact_avg, it);
        }
        Ok(row)
    }
}

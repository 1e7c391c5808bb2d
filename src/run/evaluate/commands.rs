//! The small subcommands of `armac-eval` as library calls: each computes a report that the
//! binary prints as text or JSON (`replay`, `nashconv`, `match`, `export-policy`,
//! `export-onnx`, `search-nashconv`). The LBR and scorecard commands live in [`super::lbr_command`] and
//! [`super::scorecard`].

use super::{
    AivatBase, MatchOptions, MatchOutcome, PolicyArgs, aivat_estimates, exact_tree, match_policy,
    play_match_valued,
};
use crate::eval::{nash_conv, tree_policy};
use crate::game::{Action, Turn, history_string};
use crate::games::load_game;
use crate::policy::Policy;
use crate::run::RunError;
use crate::search::{SearchEval, search_nash_conv};
use serde_json::json;
use std::path::Path;

/// `--actions a,b,c`: action numbers separated by commas (blanks ignored).
pub fn parse_actions(text: &str) -> Result<Vec<Action>, RunError> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<Action>()
                .map_err(|_| RunError::Usage(format!("`{t}` in --actions is not an action number")))
        })
        .collect()
}

/// A report of a subcommand: its JSON object (serialized) and its text lines.
pub struct Report {
    pub json: String,
    pub text: String,
}

impl Report {
    /// The report as the binary prints it (`--json` or text).
    pub fn render(&self, as_json: bool) -> String {
        if as_json {
            self.json.clone()
        } else {
            self.text.clone()
        }
    }
}

/// `replay`: every prefix of `actions` in `game` (with `policy`, its probabilities at each
/// decision). An action that is not legal is refused naming its position.
pub fn replay(game_name: &str, actions: &str, policy: Option<&str>) -> Result<Report, RunError> {
    let game = load_game(game_name)?;
    let actions = parse_actions(actions)?;
    let policy = policy
        .map(|p| match_policy(p, game.as_ref(), "--policy", PolicyArgs::default()))
        .transpose()?;
    let mut state = game.new_initial_state();
    let mut steps = Vec::new();
    let mut text = String::new();
    for k in 0..=actions.len() {
        let turn = state.turn();
        let probabilities = match (&policy, turn) {
            (Some(p), Turn::Player(_)) => Some(p.action_probabilities(state.as_ref()).map_err(
                RunError::context(format!("policy {} at action #{k}", p.name())),
            )?),
            _ => None,
        };
        steps.push(json!({
            "probabilities": probabilities,
            "history": state.history(),
            "current_player": turn.openspiel_id(),
            "legal_actions": state.legal_actions(),
            "information_state_string": [state.information_state_string(0), state.information_state_string(1)],
        }));
        text.push_str(&format!(
            "history [{}] player {} legal {:?}\n",
            history_string(state.history()),
            turn.openspiel_id(),
            state.legal_actions()
        ));
        for p in 0..2 {
            text.push_str(&format!(
                "  infostate p{p}: {:?}\n",
                state.information_state_string(p)
            ));
        }
        if let Some(probs) = &probabilities {
            text.push_str(&format!("  probabilities {probs:?}\n"));
        }
        if k < actions.len() {
            state
                .try_apply(actions[k])
                .map_err(RunError::context(format!("action #{k} of --actions")))?;
        }
    }
    let returns = state.is_terminal().then(|| state.returns());
    if let Some(r) = returns {
        text.push_str(&format!("returns {} {}\n", r[0], r[1]));
    }
    let json = json!({
        "game": game.load_string(),
        "steps": steps,
        "terminal": state.is_terminal(),
        "returns": returns,
    })
    .to_string();
    Ok(Report {
        json,
        text: text.trim_end().to_string(),
    })
}

/// `match`: `a` against `b` in both seats, exact where the tree compiles (unless `sampled`),
/// else `hands` duplicate deals.
pub fn head_to_head(
    game_name: &str,
    (a, b): (&str, &str),
    opts: &MatchOptions,
    args: PolicyArgs,
    hands_out: Option<&Path>,
) -> Result<Report, RunError> {
    let game = load_game(game_name)?;
    args.check_applies(&[a, b])?;
    let pa = match_policy(a, game.as_ref(), "--a", args)?;
    let pb = match_policy(b, game.as_ref(), "--b", args)?;
    let base = if opts.aivat {
        Some(AivatBase::of(a, b, game.as_ref()).ok_or_else(|| {
            RunError::Usage(format!(
                "--aivat values hands with an ARMAC network's critic or a Student of Games \
                 policy's value network, and neither `{a}` nor `{b}` is a feed-forward ARMAC \
                 network (run, checkpoint or model directory) or a Hold'em `sog:DIR`"
            ))
        })?)
    } else {
        None
    };
    let searching = a.starts_with("sog:") || b.starts_with("sog:");
    let estimates = base.as_ref().map(|base| {
        aivat_estimates(
            game.as_ref(),
            (pa.as_ref(), pb.as_ref()),
            base,
            opts.aivat_values,
            searching,
            opts.seed,
        )
    });
    let values = estimates.as_ref().map(|[x, y]| [x.as_ref(), y.as_ref()]);
    let MatchOutcome {
        report,
        big_blind,
        hands_written,
    } = play_match_valued(
        game.as_ref(),
        pa.as_ref(),
        pb.as_ref(),
        opts,
        hands_out,
        values,
    )?;
    let mbb = big_blind.map(|bb| report.mbb_per_hand(bb));
    let to_mbb = |x: f64| big_blind.map(|bb| 1000.0 * x / bb);
    let aivat_json = report.aivat.as_ref().map(|v| {
        json!({
            "values": v.values,
            "mean_chips": v.mean,
            "ci95_chips": v.ci95,
            "mean_mbb": to_mbb(v.mean),
            "ci95_mbb": to_mbb(v.ci95),
            "ci95_ratio": report.ci95 / v.ci95,
        })
    });
    let json = json!({
        "game": game.load_string(),
        "a": pa.name(),
        "b": pb.name(),
        "exact": report.exact,
        "hands": report.hands,
        "seed": opts.seed,
        "mean_chips": report.mean,
        "ci95_chips": report.ci95,
        "seat_mean_chips": report.seat_mean,
        "mean_mbb": mbb.map(|m| m.0),
        "ci95_mbb": mbb.map(|m| m.1),
        "hands_out": hands_out.map(|p| p.display().to_string()),
        "hands_written": hands_written,
        "aivat": aivat_json,
        "partial": report.partial,
    })
    .to_string();
    let how = if report.exact {
        "exact".to_string()
    } else if report.partial {
        format!(
            "PARTIAL: {} of {} hands played before the stop, duplicate deals",
            report.hands,
            opts.hands.div_ceil(2) * 2
        )
    } else {
        format!("{} hands, duplicate deals", report.hands)
    };
    let mbb_text = mbb
        .map(|(m, c)| format!(" = {m:.1} ± {c:.1} mbb/hand"))
        .unwrap_or_default();
    let mut text = format!(
        "{} vs {}: {:.4} ± {:.4} per hand{} (as P0 {:.4}, as P1 {:.4}; {how})",
        pa.name(),
        pb.name(),
        report.mean,
        report.ci95,
        mbb_text,
        report.seat_mean[0],
        report.seat_mean[1]
    );
    if let Some(v) = &report.aivat {
        let mbb_text = to_mbb(v.mean)
            .zip(to_mbb(v.ci95))
            .map(|(m, c)| format!(" = {m:.1} ± {c:.1} mbb/hand"))
            .unwrap_or_default();
        text.push_str(&format!(
            "\nAIVAT ({}): {:.4} ± {:.4} per hand{mbb_text} (interval {:.2}x narrower, same \
             hands)",
            v.values,
            v.mean,
            v.ci95,
            report.ci95 / v.ci95
        ));
    }
    if let Some(path) = hands_out {
        text.push_str(&format!(
            "\nwrote {hands_written} hands to {} (Poker Hand History)",
            path.display()
        ));
    }
    Ok(Report { json, text })
}

/// `nashconv`: the exact NashConv of `policy` on `game` (games over `max_histories`
/// histories are refused).
pub fn nashconv(
    game_name: &str,
    policy: &str,
    args: PolicyArgs,
    max_histories: usize,
) -> Result<Report, RunError> {
    let game = load_game(game_name)?;
    args.check()?;
    args.check_applies(&[policy])?;
    let tree = exact_tree(game.as_ref(), max_histories)?;
    let policy = match_policy(policy, game.as_ref(), "--policy", args)?;
    let flat = tree_policy(&tree, game.as_ref(), policy.as_ref())
        .map_err(RunError::context(format!("policy {}", policy.name())))?;
    let r = nash_conv(&tree, &flat);
    let json = json!({
        "game": game.load_string(),
        "policy": policy.name(),
        "nash_conv": r.nash_conv,
        "exploitability": r.nash_conv / 2.0,
        "best_response_values": r.best_response_values,
        "on_policy_values": r.on_policy_values,
    })
    .to_string();
    Ok(Report {
        json,
        text: format!("nash_conv {}", r.nash_conv),
    })
}

/// `export-policy`: the tabular policy (OpenSpiel's JSON) of an ARMAC checkpoint, or of a
/// Student of Games run as `sog:DIR`, written to `out`. Returns the line to print.
pub fn export_policy(
    checkpoint: &Path,
    out: &Path,
    play_threshold: Option<f64>,
    max_histories: usize,
) -> Result<String, RunError> {
    let args = PolicyArgs {
        play_threshold,
        ..PolicyArgs::default()
    };
    args.check()?;
    let (game, policy): (_, Box<dyn Policy>) =
        match checkpoint.to_str().and_then(|p| p.strip_prefix("sog:")) {
            Some(dir) => {
                let (g, p) = crate::run::sog::load_search_policy(Path::new(dir), None).map_err(
                    RunError::context(format!("--checkpoint {}", checkpoint.display())),
                )?;
                (g, Box::new(p))
            }
            None => {
                let (g, p) = crate::run::armac::load_checkpoint_policy(checkpoint)?;
                (g, Box::new(args.apply(p)))
            }
        };
    let tree = exact_tree(game.as_ref(), max_histories)?;
    let flat = tree_policy(&tree, game.as_ref(), policy.as_ref())?;
    let table = crate::run::tabular::to_tabular_policy(&tree, game.as_ref(), &flat);
    crate::util::write_atomic(out, table.to_json().as_bytes())
        .map_err(crate::run::io_err("the policy", out))?;
    Ok(format!(
        "wrote {} ({} infostates of {})",
        out.display(),
        table.table.len(),
        game.load_string()
    ))
}

/// `export-onnx`: the policy an ARMAC model, run or checkpoint directory plays, as an ONNX
/// file (see [`crate::nn::armac::ArmacPolicyNet::to_onnx`]). `policy` may be `current:DIR`;
/// `current` (`--head`) chooses the head, `Some(false)` with `current:DIR` is refused;
/// `play_threshold` replaces the checkpoint's `armac.play_threshold`. Returns the line the
/// binary prints.
pub fn export_onnx(
    policy: &str,
    current: Option<bool>,
    play_threshold: Option<f64>,
    out: &Path,
) -> Result<String, RunError> {
    if policy.starts_with("sog:") {
        return Err(RunError::Usage(format!(
            "--policy {policy}: a Student of Games policy searches at every decision; only \
             ARMAC networks export to ONNX"
        )));
    }
    let args = PolicyArgs {
        play_threshold,
        ..PolicyArgs::default()
    };
    args.check()?;
    let (prefixed, dir) = super::checkpoint_arg(policy);
    let current = match current {
        Some(false) if prefixed => {
            return Err(RunError::Usage(format!(
                "--policy {policy} names the current policy but --head asks for the average one"
            )));
        }
        Some(c) => c,
        None => prefixed,
    };
    let (game, p) = crate::run::armac::load_checkpoint_policy(dir)
        .map_err(RunError::context(format!("--policy {policy}")))?;
    let p = args.apply(p).with_current_policy(current);
    let bytes = p
        .to_onnx()
        .map_err(RunError::context(format!("--policy {policy}")))?;
    crate::util::write_atomic(out, &bytes).map_err(crate::run::io_err("the ONNX model", out))?;
    Ok(format!(
        "wrote {} ({} bytes, ONNX opset {}): the {} policy of epoch {} of {}, play threshold {}; \
         inputs `{}` [N, {}] and `{}` [N, {}], output `{}` [N, {}]",
        out.display(),
        bytes.len(),
        crate::nn::onnx::OPSET,
        if current { "current" } else { "average" },
        p.epoch(),
        game.load_string(),
        p.threshold(),
        crate::nn::armac::ONNX_INPUT_INFO_STATE,
        game.information_state_tensor_size(),
        crate::nn::armac::ONNX_INPUT_LEGAL_MASK,
        game.num_distinct_actions(),
        crate::nn::armac::ONNX_OUTPUT_PROBABILITIES,
        game.num_distinct_actions(),
    ))
}

/// `search-nashconv --game G`: exact NashConv of continual re-solving with exact leaf values.
pub fn search_nashconv(game_name: &str, eval: &SearchEval) -> Result<Report, RunError> {
    let game = load_game(game_name)?;
    let r = search_nash_conv(game.as_ref(), eval).map_err(RunError::context(format!(
        "search-nashconv on `{}`",
        game.load_string()
    )))?;
    Ok(Report {
        json: serde_json::to_string(&r).map_err(RunError::context("the report"))?,
        text: format!(
            "nash_conv {} ({} searches, {:.1} s)",
            r.nash_conv, r.stats.searches, r.stats.seconds
        ),
    })
}

/// `search-nashconv --run DIR`: the same with the CVPN of a Student of Games run.
pub fn search_nashconv_run(
    dir: &Path,
    game: Option<&str>,
    simulations: Option<usize>,
) -> Result<Report, RunError> {
    let r = crate::run::sog::evaluate_run(dir, simulations, game).map_err(RunError::context(
        format!("search-nashconv --run {}", dir.display()),
    ))?;
    Ok(Report {
        json: serde_json::to_string(&r).map_err(RunError::context("the report"))?,
        text: format!(
            "nash_conv {} (CVPN of round {}, {} searches, {:.1} s)",
            r.nash_conv, r.round, r.stats.searches, r.stats.seconds
        ),
    })
}

//! `armac-eval lbr`: Local Best Response against one policy, or against every checkpoint of
//! an ARMAC run as it is committed (`--watch`), with one or several LBR variants.
//!
//! Each variant is one LBR run on the same seed (so the variants of one evaluation see the
//! same deals). With a reference policy (`--reference`), LBR against it is played once per
//! variant, before anything else, and every result is paired with it on the same deals
//! ([`paired_ratio`]).

use super::hands::HandsOut;
use super::{PolicyArgs, breakdown_table, holdem_game, lbr_policy, lbr_recorded, lbr_with_bar};
use crate::eval::lbr::{LbrOptions, LbrResult, LbrRule, LbrVariant, RangePolicy, paired_ratio};
use crate::game::Game;
use crate::games::universal_poker::UniversalPokerGame;
use crate::run::RunError;
use crate::run::tensorboard::TbWriter;
use crate::util::check;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The settings of `armac-eval lbr` (its flags, one field each).
#[derive(Clone, Debug)]
pub struct LbrCommand {
    /// Game name or OpenSpiel game string.
    pub game: String,
    /// The policy (see [`lbr_policy`]); `None` with `watch`.
    pub policy: Option<String>,
    /// An ARMAC run directory to follow.
    pub watch: Option<PathBuf>,
    /// With `watch`: every checkpoint, not only the newest when an evaluation ends.
    pub every_checkpoint: bool,
    /// With `watch`: seconds between looks at the run directory.
    pub poll_seconds: f64,
    /// The variants ([`parse_variants`]).
    pub variant: String,
    /// How LBR values its raises (`--rule`: Lisý & Bowling's standard rule by default).
    pub rule: LbrRule,
    /// Hands per variant.
    pub hands: u64,
    /// Run seed.
    pub seed: u64,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Sampled (hand, board) pairs per pre-flop equity.
    pub preflop_samples: usize,
    /// One JSON object per result instead of text.
    pub json: bool,
    /// Also write TensorBoard scalars into this directory.
    pub logdir: Option<PathBuf>,
    /// TensorBoard step of a single evaluation.
    pub step: u64,
    /// ARMAC networks: the slow reference path of range queries.
    pub replay_ranges: bool,
    /// A reference policy for the paired ratio.
    pub reference: Option<String>,
    /// Also report where LBR's winnings come from (hands by how they ended).
    pub breakdown: bool,
    /// How the policies are loaded: CFR+ iterations of a Hold'em `sog:DIR` search, and how
    /// ARMAC networks play (threshold, endgame solving; see [`PolicyArgs`]).
    pub play: PolicyArgs,
    /// Write every hand LBR plays against the policy (each variant in turn) to this file in
    /// the Poker Hand History format.
    pub hands_out: Option<PathBuf>,
}

/// `--variant`: `fc`, `fcpa`, `fc12-fcpa34`, a comma-separated list of them (in the order
/// given, each at most once) or `all` (the three, in that order).
pub fn parse_variants(text: &str) -> Result<Vec<LbrVariant>, RunError> {
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(LbrVariant::ALL.to_vec());
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        let v = LbrVariant::parse(part).ok_or_else(|| {
            RunError::Usage(format!(
                "--variant `{text}` is not one of fc, fcpa, fc12-fcpa34 (or a comma list of \
                 them, or all)"
            ))
        })?;
        if out.contains(&v) {
            return Err(RunError::Usage(format!(
                "--variant `{text}` names {} twice",
                v.name()
            )));
        }
        out.push(v);
    }
    Ok(out)
}

/// Runs `armac-eval lbr` (see the module docs and the binary's help).
pub fn run(args: &LbrCommand) -> Result<(), RunError> {
    let variants = parse_variants(&args.variant)?;
    check::hands("--hands", args.hands).map_err(RunError::Usage)?;
    let game = holdem_game(&args.game, &variants, "LBR")?;
    check::seconds("--poll-seconds", args.poll_seconds).map_err(RunError::Usage)?;
    if args.poll_seconds == 0.0 {
        return Err(RunError::Usage(
            "--poll-seconds must be a positive number of seconds".into(),
        ));
    }
    let watched = args.watch.as_ref().map(|w| w.display().to_string());
    let names: Vec<&str> = [
        args.policy.as_deref(),
        watched.as_deref(),
        args.reference.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    args.play.check_applies(&names)?;
    if args.watch.is_some() && args.hands_out.is_some() {
        return Err(RunError::Usage(
            "--hands-out writes the hands of one policy; drop --watch".into(),
        ));
    }
    if args.watch.is_some() && args.logdir.is_some() {
        return Err(RunError::Usage(
            "--watch writes into the run's own TensorBoard; drop --logdir".into(),
        ));
    }
    // With a reference, its result per variant is kept for pairing, with the one being played.
    let paired = if args.reference.is_some() {
        variants.len() as u64 + 1
    } else {
        0
    };
    super::lbr_memory_check(args.hands, paired, args.hands_out.is_some())?;
    let opts: Vec<LbrOptions> = variants
        .iter()
        .map(|&variant| LbrOptions {
            variant,
            hands: args.hands,
            seed: args.seed,
            threads: args.threads,
            preflop_samples: args.preflop_samples,
            defer_range_updates: true,
            rule: args.rule,
            keep_deal_means: args.reference.is_some(),
        })
        .collect();
    let game_string = game.load_string();
    let load = |name: &str| lbr_policy(name, &game_string, args.replay_ranges, args.play);
    let references: Vec<Option<LbrResult>> = match &args.reference {
        Some(name) => {
            let policy = load(name).map_err(RunError::context(format!("--reference {name}")))?;
            opts.iter()
                .map(|o| {
                    let label = format!("{} vs {name}", o.rule.label(o.variant));
                    lbr_with_bar(&game, policy.as_ref(), o, &label)
                        .map(Some)
                        .map_err(RunError::context("--reference"))
                })
                .collect::<Result<_, _>>()?
        }
        None => vec![None; opts.len()],
    };
    let Some(run) = args.watch.as_deref() else {
        let policy = load(args.policy.as_deref().unwrap_or_default())?;
        let mut tb = match &args.logdir {
            Some(dir) => Some(TbWriter::create(dir).map_err(|e| {
                RunError::Usage(format!(
                    "cannot write TensorBoard events in {}: {e}",
                    dir.display()
                ))
            })?),
            None => None,
        };
        let mut hands_out = args
            .hands_out
            .as_deref()
            .map(|path| HandsOut::create(&game, path))
            .transpose()?;
        for (o, reference) in opts.iter().zip(&references) {
            let report = Report {
                tb: tb.as_mut(),
                step: args.step,
                reference: reference.as_ref(),
                hands_out: hands_out.as_mut(),
            };
            lbr_once(&game, policy.as_ref(), o, report, args)?;
        }
        if let Some(out) = hands_out {
            let path = args.hands_out.as_deref().unwrap_or(Path::new(""));
            let n = out.finish()?;
            if !args.json {
                println!("wrote {n} hands to {} (Poker Hand History)", path.display());
            }
        }
        return Ok(());
    };
    watch(run, &game, &opts, &references, args)
}

/// `--watch RUN`: every new checkpoint of `run` against each variant of `opts`, written to the
/// run's TensorBoard and to `<RUN>/lbr_<variant>.csv`.
fn watch(
    run: &Path,
    game: &UniversalPokerGame,
    opts: &[LbrOptions],
    references: &[Option<LbrResult>],
    args: &LbrCommand,
) -> Result<(), RunError> {
    let mut tb = TbWriter::create(run).map_err(|e| {
        RunError::Usage(format!(
            "cannot write TensorBoard events in {}: {e}",
            run.display()
        ))
    })?;
    let watch = crate::run::watch::WatchOptions {
        every_checkpoint: args.every_checkpoint,
        poll_seconds: args.poll_seconds,
        idle_timeout: None,
    };
    let game_string = game.load_string();
    let steps = crate::run::watch::watch_checkpoints(run, &watch, |dir, step| {
        let policy = lbr_policy(
            &dir.display().to_string(),
            &game_string,
            args.replay_ranges,
            args.play,
        )?;
        for (o, reference) in opts.iter().zip(references) {
            let report = Report {
                tb: Some(&mut tb),
                step,
                reference: reference.as_ref(),
                hands_out: None,
            };
            let r = lbr_once(game, policy.as_ref(), o, report, args)?;
            if r.partial {
                // A curve holds whole evaluations only.
                return Err(RunError::Usage(format!(
                    "stopped during the evaluation of step {step}: nothing written to its curve"
                ))
                .into());
            }
            append_csv(&run.join(format!("{}.csv", scalar_name(o))), step, &r)?;
        }
        Ok(())
    })?;
    if steps.is_empty() {
        return Err(RunError::Usage(format!(
            "{}: the run ended without a checkpoint to evaluate",
            run.display()
        )));
    }
    Ok(())
}

/// Appends one row (`step,mean_mbb,ci95_mbb,hands,seconds`) to the curve `csv`, writing the
/// header first when the file is new; a curve that is no regular file is refused, named.
fn append_csv(csv: &Path, step: u64, r: &LbrResult) -> std::io::Result<()> {
    let new = std::fs::symlink_metadata(csv).is_err();
    let mut f = crate::util::append_regular(csv)?;
    if new {
        writeln!(f, "step,mean_mbb,ci95_mbb,hands,seconds")?;
    }
    writeln!(
        f,
        "{step},{},{},{},{:.3}",
        r.mean_mbb, r.ci95_mbb, r.hands, r.seconds
    )
}

/// The name of an LBR curve (TensorBoard tag under `lbr/`, CSV file stem): `lbr_fcpa` for the
/// standard rule, `lbr_sharp_fcpa` for the sharp one.
fn scalar_name(o: &LbrOptions) -> String {
    match o.rule {
        LbrRule::Standard => format!("lbr_{}", o.variant),
        rule => format!("lbr_{rule}_{}", o.variant),
    }
}

/// Where [`lbr_once`] reports besides stdout.
struct Report<'a> {
    /// TensorBoard scalars at `step`.
    tb: Option<&'a mut TbWriter>,
    step: u64,
    /// LBR against the reference policy on the same deals (`--reference`).
    reference: Option<&'a LbrResult>,
    /// Where every hand goes (`--hands-out`).
    hands_out: Option<&'a mut HandsOut>,
}

/// One LBR evaluation of `policy`: progress bar, TensorBoard scalars when `report.tb` is
/// given, the ratio to the reference when there is one, and the report on stdout (one JSON
/// object with `--json`).
fn lbr_once(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    report: Report<'_>,
    args: &LbrCommand,
) -> Result<LbrResult, RunError> {
    let variant = opts.variant;
    let step = report.step;
    let label = format!("{} vs {}", opts.rule.label(variant), policy.name());
    let r = lbr_recorded(game, policy, opts, &label, report.hands_out)?;
    // Both runs share the options, so they always pair up; the ratio is undefined only when
    // LBR won exactly nothing against the reference.
    let ratio = report
        .reference
        .and_then(|reference| paired_ratio(&r, reference));
    if let Some(tb) = report.tb {
        let tag = match opts.rule {
            LbrRule::Standard => format!("lbr/{variant}"),
            rule => format!("lbr/{rule}_{variant}"),
        };
        tb.scalar(&tag, r.mean_mbb, step);
        if r.ci95_mbb.is_finite() {
            tb.scalar(&format!("{tag}_ci95"), r.ci95_mbb, step);
        }
        if let Some(q) = &ratio {
            tb.scalar(&format!("{tag}_ratio"), q.ratio, step);
            if q.ci95.is_finite() {
                tb.scalar(&format!("{tag}_ratio_ci95"), q.ci95, step);
            }
        }
        tb.flush();
    }
    let reference_json = match report.reference {
        Some(reference) => json!({
            "policy": reference.policy,
            "mean": reference.mean_mbb,
            "ci95": reference.ci95_mbb,
            "ratio": ratio.as_ref().map(|q| q.ratio),
            "ratio_ci95": ratio.as_ref().map(|q| q.ci95),
        }),
        None => serde_json::Value::Null,
    };
    if args.json {
        println!(
            "{}",
            json!({
                "game": game.load_string(),
                "policy": r.policy,
                "variant": r.variant,
                "rule": opts.rule.name(),
                "hands": r.hands,
                "partial": r.partial,
                "mean": r.mean_mbb,
                "ci95": r.ci95_mbb,
                "unit": "mbb/hand",
                "mean_chips": r.mean_chips,
                "ci95_chips": r.ci95_chips,
                "seat_mean_chips": r.seat_mean_chips,
                "seconds": r.seconds,
                "hands_per_second": r.hands as f64 / r.seconds.max(1e-9),
                "seed": r.seed,
                "preflop_samples": args.preflop_samples,
                "step": step,
                "reference": reference_json,
                "breakdown": if args.breakdown { json!(r.breakdown) } else { serde_json::Value::Null },
            })
        );
    } else {
        println!(
            "{} vs {}: {:.1} ± {:.1} mbb/hand ({:.2} ± {:.2} chips/hand; LBR as P0 {:.2}, as P1 {:.2} chips/hand) over {} hands in {:.1} s",
            opts.rule.label(variant),
            r.policy,
            r.mean_mbb,
            r.ci95_mbb,
            r.mean_chips,
            r.ci95_chips,
            r.seat_mean_chips[0],
            r.seat_mean_chips[1],
            r.hands,
            r.seconds
        );
        if r.partial {
            println!(
                "PARTIAL: stopped after {} of {} hands; the figures above cover those hands",
                r.hands,
                opts.hands.div_ceil(4) * 4
            );
        }
        if let Some(reference) = report.reference {
            let ratio = match &ratio {
                Some(q) => format!("ratio {:.3} ± {:.3} (paired)", q.ratio, q.ci95),
                None => "no ratio (LBR won nothing against the reference)".to_string(),
            };
            println!(
                "reference {}: {:.1} ± {:.1} mbb/hand on the same deals; {ratio}",
                reference.policy, reference.mean_mbb, reference.ci95_mbb
            );
        }
        if args.breakdown {
            print!("{}", breakdown_table(&r.breakdown, r.hands));
        }
    }
    Ok(r)
}

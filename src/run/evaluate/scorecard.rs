//! The scorecard of a heads-up no-limit Hold'em policy (`armac-eval scorecard`): one table of
//! the measures the project judges Hold'em agents by, on fixed seeds.
//!
//! # Rows
//!
//! * **vs uniform**, **vs always-call**: duplicate matches ([`sampled_match`](crate::eval::matchup::sampled_match)): `match_hands`
//!   hands, every deal played twice with the seats swapped, the policy's winnings in mbb/hand
//!   with a 95% interval. The same figures as `armac-eval match --a POLICY --b uniform
//!   --hands M --seed S`.
//! * **LBR-FC**, **LBR-FCPA**, **LBR-FC12-FCPA34**: Local Best Response ([`run_lbr`](crate::eval::lbr::run_lbr)) against
//!   the policy, `hands` hands, LBR's winnings in mbb/hand with a 95% interval (lower is
//!   better for the policy), and the ratio to what the same LBR wins against the uniform
//!   policy on the same deals, with the paired 95% interval of [`paired_ratio`]. LBR against
//!   uniform is played once per variant and shared by every policy of the card. The same
//!   figures as `armac-eval lbr --policy POLICY --variant V --hands N --seed S
//!   --reference uniform`. These are Lisý & Bowling's LBR (the standard rule).
//! * **sharp LBR-FCPA**, **sharp LBR-FC12-FCPA34** (only with `--sharp-lbr`): the same with
//!   the sharp rule ([`LbrRule::Sharp`]: a raise valued against the hands that call or
//!   re-raise it), on the same seeds and deals as the standard rows, each with its ratio to
//!   the sharp LBR against uniform. JSON: `lbr_sharp` in each column, `lbr_sharp_uniform`.
//!
//! # Policies
//!
//! An ARMAC run or model directory is scored twice, as its average policy (column `average`)
//! and as its current policy pi^t (`current`, the `current:DIR` form); an explicit
//! `current:DIR` is scored as `current` only, `sog:DIR` (Student of Games search) as
//! `search`, anything else the loaders accept (`uniform`, `always-call`, a policy file) as
//! `policy`. LBR needs range queries, which the current policy of a recurrent network does
//! not answer: a recurrent checkpoint gets the `average` column only (an explicit
//! `current:DIR` of one is refused).
//!
//! # Seeds
//!
//! Every row has its own seed, derived from the scorecard's seed `S` ([`Seeds::of`]): the
//! match against uniform `S`, against always-call `S + 1`, LBR-FC `S + 2`, LBR-FCPA `S + 3`,
//! LBR-FC12-FCPA34 `S + 4` (wrapping). Results do not depend on `threads`.
//!
//! # JSON
//!
//! [`Scorecard`] serialises to one object with stable field names (the `scorecard` field of a
//! shipped Hold'em model's `score.json`): `game`, `policy` (the argument), `seed`, `hands`
//! (LBR hands per row), `match_hands`, `preflop_samples`, `unit` (`mbb/hand`), `seeds`,
//! `lbr_uniform` (per variant `fc`, `fcpa`, `fc12-fcpa34`: `mean`, `ci95`, `hands`, `seed`),
//! `policies` (per column name: `argument`, `policy` (its name), `vs_uniform` and
//! `vs_always_call` (`mean`, `ci95`, `hands`, `seed`), `lbr` (per variant: the same plus
//! `ratio`, `ratio_ci95`, `null` when LBR won exactly nothing against uniform, and with
//! `--breakdown` `breakdown`, LBR's hands by how they ended)), and `timing`
//! (wall seconds in all and per row, the only field that differs between two runs with the
//! same seed). Intervals that are undefined (a single deal) are `null`.

use super::hands::HandsOut;
use super::{AivatValues, PolicyArgs, holdem_game, lbr_policy, lbr_recorded, match_policy};
use crate::eval::lbr::{
    AlwaysCall, BreakdownRow, LbrOptions, LbrResult, LbrRule, LbrVariant, paired_ratio,
};
use crate::eval::matchup::{HandRecorder, PlayedHand, sampled_match_with};
use crate::game::{Action, Game};
use crate::games::universal_poker::UniversalPokerGame;
use crate::policy::{Policy, UniformPolicy};
use crate::run::RunError;
use crate::util::check;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

mod text;

/// Default LBR hands per row: the whole scorecard of the shipped feed-forward model (nine LBR
/// rows, four matches) in about three minutes on 2 cores (docs/results.md).
pub const DEFAULT_HANDS: u64 = 4_000;

/// Default hands per match (a match is much cheaper than LBR).
pub const DEFAULT_MATCH_HANDS: u64 = 20_000;

/// What to score and how.
#[derive(Clone, Debug)]
pub struct ScorecardOptions {
    /// Game name or OpenSpiel game string (heads-up no-limit Hold'em with FCPA actions).
    pub game: String,
    /// The policy argument (see the module docs).
    pub policy: String,
    /// LBR hands per row (rounded up to a multiple of 4).
    pub hands: u64,
    /// Hands per match (rounded up to an even number).
    pub match_hands: u64,
    /// The scorecard's seed; every row's seed derives from it ([`Seeds::of`]).
    pub seed: u64,
    /// Worker threads of LBR and of the matches (0: one per core).
    pub threads: usize,
    /// Sampled (hand, board) pairs per pre-flop equity of LBR.
    pub preflop_samples: usize,
    /// How the policy is loaded: CFR+ iterations of a `sog:DIR` search (default: the
    /// `sog.search.s` it trained with; 200 for a bare CVPN directory), and how ARMAC networks
    /// play (threshold, endgame solving; see [`PolicyArgs`]).
    pub play: PolicyArgs,
    /// Keep each LBR row's breakdown of LBR's winnings by how the hands ended
    /// ([`LbrRow::breakdown`]).
    pub breakdown: bool,
    /// Also run the sharp LBR rule ([`LbrRule::Sharp`]) for the raising variants (rows `sharp
    /// LBR-FCPA`, `sharp LBR-FC12-FCPA34`, on the seeds and deals of the standard rows).
    pub sharp_lbr: bool,
    /// Write every hand the scorecard plays to this file in the Poker Hand History format, in
    /// the order of the rows: LBR against uniform (each variant), the matches (per column,
    /// against uniform then always-call), then each column's LBR rows.
    pub hands_out: Option<std::path::PathBuf>,
    /// Report the AIVAT estimate of each match beside its plain mean, with this value
    /// estimate, for the columns that are feed-forward ARMAC networks (their critic is the
    /// base value estimate) or Student of Games policies (their value network); `None` (the
    /// default) leaves AIVAT out. It costs the matches time: on the shipped Hold'em model
    /// about 8 times a plain match's CPU time per hand with [`AivatValues::Critic`], 140-150
    /// times with [`AivatValues::Pair`] (docs/results.md#aivat).
    pub aivat: Option<AivatValues>,
}

impl ScorecardOptions {
    /// The defaults ([`DEFAULT_HANDS`], [`DEFAULT_MATCH_HANDS`], seed 0, all cores) for
    /// `policy` on `hunl_fcpa`.
    pub fn new(policy: &str) -> ScorecardOptions {
        ScorecardOptions {
            game: "hunl_fcpa".into(),
            policy: policy.into(),
            hands: DEFAULT_HANDS,
            match_hands: DEFAULT_MATCH_HANDS,
            seed: 0,
            threads: 0,
            preflop_samples: crate::eval::lbr::DEFAULT_PREFLOP_SAMPLES,
            play: PolicyArgs::default(),
            breakdown: false,
            sharp_lbr: false,
            hands_out: None,
            aivat: None,
        }
    }
}

/// The seed of every row, derived from the scorecard's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Seeds {
    /// The match against uniform: `S`.
    pub vs_uniform: u64,
    /// The match against always-call: `S + 1`.
    pub vs_always_call: u64,
    /// LBR-FC: `S + 2`.
    pub lbr_fc: u64,
    /// LBR-FCPA: `S + 3`.
    pub lbr_fcpa: u64,
    /// LBR-FC12-FCPA34: `S + 4`.
    pub lbr_fc12_fcpa34: u64,
}

impl Seeds {
    /// The seeds of a scorecard with seed `seed` (wrapping additions).
    pub fn of(seed: u64) -> Seeds {
        Seeds {
            vs_uniform: seed,
            vs_always_call: seed.wrapping_add(1),
            lbr_fc: seed.wrapping_add(2),
            lbr_fcpa: seed.wrapping_add(3),
            lbr_fc12_fcpa34: seed.wrapping_add(4),
        }
    }

    /// The seed of LBR with `variant`.
    pub fn lbr(&self, variant: LbrVariant) -> u64 {
        match variant {
            LbrVariant::Fc => self.lbr_fc,
            LbrVariant::Fcpa => self.lbr_fcpa,
            LbrVariant::Fc12Fcpa34 => self.lbr_fc12_fcpa34,
        }
    }
}

/// A sampled figure in mbb/hand.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The mean.
    pub mean: f64,
    /// Half-width of its 95% confidence interval (`null` in JSON when undefined).
    pub ci95: f64,
    /// Hands played.
    pub hands: u64,
    /// The row's seed.
    pub seed: u64,
    /// Matches of an ARMAC network's column: AIVAT's estimate of the same mean on the same
    /// hands (`mean`, `ci95` in mbb/hand, `values`: the value estimate); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aivat: Option<AivatEstimate>,
}

/// AIVAT's estimate of a match's mean ([`crate::eval::aivat`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AivatEstimate {
    /// The mean, mbb/hand.
    pub mean: f64,
    /// Half-width of its 95% interval.
    pub ci95: f64,
    /// The value estimate.
    pub values: String,
}

/// LBR against one policy, with its ratio to LBR against uniform on the same deals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LbrRow {
    /// LBR's winnings.
    #[serde(flatten)]
    pub estimate: Estimate,
    /// `mean / mean against uniform` (`None` when LBR won exactly nothing against uniform).
    pub ratio: Option<f64>,
    /// Half-width of the paired 95% interval of `ratio`.
    pub ratio_ci95: Option<f64>,
    /// LBR's winnings by how the hands ended, largest share first (only with
    /// [`ScorecardOptions::breakdown`]; absent from the JSON otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Vec<BreakdownRow>>,
}

/// One column of the scorecard.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyCard {
    /// The policy argument it was loaded from (e.g. `current:models/hunl_fcpa_armac`).
    pub argument: String,
    /// The policy's own name (e.g. `armac-average-policy(epoch 3775)`).
    pub policy: String,
    /// The duplicate match against uniform, from the policy's side.
    pub vs_uniform: Estimate,
    /// The duplicate match against always-call, from the policy's side.
    pub vs_always_call: Estimate,
    /// LBR rows by variant name (`fc`, `fcpa`, `fc12-fcpa34`).
    pub lbr: BTreeMap<String, LbrRow>,
    /// With [`ScorecardOptions::sharp_lbr`], the sharp LBR rows by variant name (`fcpa`,
    /// `fc12-fcpa34`); absent from the JSON otherwise.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lbr_sharp: BTreeMap<String, LbrRow>,
}

/// Wall-clock seconds of the scorecard.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    /// The whole scorecard, loading included.
    pub seconds: f64,
    /// Each row: `<column>/<row>` (`uniform/lbr_fc`, `average/vs_uniform`, ...); the matches
    /// run in parallel, so their seconds overlap.
    pub rows: BTreeMap<String, f64>,
}

/// The scorecard (see the module docs for the JSON fields).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scorecard {
    /// The game's OpenSpiel string.
    pub game: String,
    /// The policy argument.
    pub policy: String,
    /// The scorecard's seed.
    pub seed: u64,
    /// LBR hands per row.
    pub hands: u64,
    /// Hands per match.
    pub match_hands: u64,
    /// LBR's pre-flop equity samples.
    pub preflop_samples: usize,
    /// `mbb/hand`.
    pub unit: String,
    /// The rows' seeds.
    pub seeds: Seeds,
    /// LBR against the uniform policy by variant name: the denominators of the ratios.
    pub lbr_uniform: BTreeMap<String, Estimate>,
    /// With [`ScorecardOptions::sharp_lbr`], the sharp LBR against uniform by variant name;
    /// absent from the JSON otherwise.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lbr_sharp_uniform: BTreeMap<String, Estimate>,
    /// The columns by name (`average`, `current`, `search`, `policy`).
    pub policies: BTreeMap<String, PolicyCard>,
    /// Wall-clock seconds.
    pub timing: Timing,
}

/// The columns of `policy`: `(name, argument)` pairs (see the module docs).
pub fn columns(policy: &str) -> Vec<(&'static str, String)> {
    if policy.starts_with("current:") {
        vec![("current", policy.to_string())]
    } else if policy.starts_with("sog:") {
        vec![("search", policy.to_string())]
    } else if Path::new(policy).is_dir() {
        vec![
            ("average", policy.to_string()),
            ("current", format!("current:{policy}")),
        ]
    } else {
        vec![("policy", policy.to_string())]
    }
}

/// A policy loaded twice: for matches (per state) and for LBR (per range).
struct Column {
    name: &'static str,
    argument: String,
    per_state: Box<dyn Policy>,
    per_range: Box<dyn crate::eval::lbr::RangePolicy>,
    /// AIVAT's base value estimate (with [`ScorecardOptions::aivat`]): an ARMAC network's
    /// critic or a Student of Games policy's value network.
    aivat: Option<super::AivatBase>,
}

fn mbb(game: &UniversalPokerGame, chips: (f64, f64)) -> (f64, f64) {
    let k = 1000.0 / game.config().big_blind as f64;
    (chips.0 * k, chips.1 * k)
}

fn estimate(r: &LbrResult) -> Estimate {
    Estimate {
        mean: r.mean_mbb,
        ci95: r.ci95_mbb,
        hands: r.hands,
        seed: r.seed,
        aivat: None,
    }
}

/// Whether `dir` holds an ARMAC checkpoint with a recurrent network (`false` when it holds
/// none: loading the column then reports why).
fn recurrent(dir: &Path) -> bool {
    crate::run::armac::load_checkpoint_policy(dir).is_ok_and(|(_, p)| p.is_recurrent())
}

/// Checks the options and loads every column, before anything is played.
fn prepare(opts: &ScorecardOptions) -> Result<(UniversalPokerGame, Vec<Column>), RunError> {
    check::hands("--hands", opts.hands).map_err(RunError::Usage)?;
    check::hands("--match-hands", opts.match_hands).map_err(RunError::Usage)?;
    // The LBR rows against uniform are kept for pairing, with the row being played.
    let rows = LbrVariant::ALL.len()
        + if opts.sharp_lbr {
            SHARP_VARIANTS.len()
        } else {
            0
        };
    super::lbr_memory_check(opts.hands, rows as u64 + 1, opts.hands_out.is_some())?;
    if opts.preflop_samples == 0 {
        return Err(RunError::Usage("--preflop-samples must be positive".into()));
    }
    let game = holdem_game(&opts.game, &LbrVariant::ALL, "the scorecard")?;
    let game_string = game.load_string();
    let args = opts.play;
    args.check()?;
    args.check_applies(&[&opts.policy])?;
    let mut out = Vec::new();
    let explicit = !Path::new(&opts.policy).is_dir();
    for (name, argument) in columns(&opts.policy) {
        if name == "current" && recurrent(super::checkpoint_arg(&argument).1) {
            // LBR queries ranges, which the current policy of a recurrent net does not answer.
            let why = "LBR needs range queries of the current policy, which only feed-forward \
                       networks answer; this checkpoint's network is recurrent";
            if explicit {
                return Err(RunError::Usage(format!("--policy {argument}: {why}")));
            }
            eprintln!("{argument}: not scored ({why})");
            continue;
        }
        let per_state = match_policy(&argument, &game, "--policy", args)?;
        let per_range = lbr_policy(&argument, &game_string, false, args)?;
        let aivat = opts
            .aivat
            .and_then(|_| super::AivatBase::of(&argument, "uniform", &game));
        out.push(Column {
            name,
            argument,
            per_state,
            per_range,
            aivat,
        });
    }
    Ok((game, out))
}

/// The four-or-fewer matches of the columns against uniform and always-call, in parallel on
/// `opts.threads` threads (each match is sequential, so its result is that of `armac-eval
/// match` with the same seed); returns `(vs_uniform, vs_always_call, seconds of each)` per
/// column, and written to `out` every hand, match by match.
#[allow(clippy::type_complexity)]
fn matches(
    game: &UniversalPokerGame,
    columns: &[Column],
    opts: &ScorecardOptions,
    seeds: &Seeds,
    out: Option<&mut HandsOut>,
) -> Result<Vec<(Estimate, Estimate, [f64; 2])>, RunError> {
    let keep = out.is_some();
    let jobs: Vec<(usize, usize)> = (0..columns.len()).flat_map(|c| [(c, 0), (c, 1)]).collect();
    let bar = crate::run::progress_bar(jobs.len() as u64, "matches");
    bar.set_message(format!("{} hands each", opts.match_hands.div_ceil(2) * 2));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| RunError::Usage(format!("cannot start the thread pool: {e}")))?;
    let results: Vec<(Estimate, f64, Vec<(Vec<Action>, usize)>)> = pool.install(|| {
        jobs.par_iter()
            .map(|&(c, opponent)| {
                let start = Instant::now();
                let column = &columns[c];
                let (b, seed, name): (&dyn Policy, u64, &str) = match opponent {
                    0 => (&UniformPolicy, seeds.vs_uniform, "uniform"),
                    _ => (&AlwaysCall, seeds.vs_always_call, "always-call"),
                };
                let deals = opts.match_hands.div_ceil(2);
                let mut hands = Vec::new();
                let mut keep_hand = |h: PlayedHand<'_>| {
                    hands.push((h.history.to_vec(), h.a_seat));
                    Ok(())
                };
                let record: Option<&mut HandRecorder<'_>> = keep.then_some(&mut keep_hand);
                let a = column.per_state.as_ref();
                let searching = column.argument.starts_with("sog:");
                let values = opts.aivat.unwrap_or_default();
                let estimates = column.aivat.as_ref().map(|base| {
                    super::aivat_estimates(game, (a, b), base, values, searching, seed)
                });
                let aivat = estimates.as_ref().map(|[x, y]| {
                    (
                        [x.as_ref(), y.as_ref()],
                        crate::eval::aivat::AivatOptions::default(),
                    )
                });
                let watch = crate::eval::Watch::default();
                let report = sampled_match_with(game, a, b, deals, seed, record, aivat, watch)
                    .map_err(RunError::context(format!(
                        "the match of {} against {name}",
                        column.argument
                    )))?;
                bar.inc(1);
                let (mean, ci95) = mbb(game, (report.mean, report.ci95));
                let e = Estimate {
                    mean,
                    ci95,
                    hands: report.hands,
                    seed,
                    aivat: report.aivat.map(|v| {
                        let (mean, ci95) = mbb(game, (v.mean, v.ci95));
                        AivatEstimate {
                            mean,
                            ci95,
                            values: v.values,
                        }
                    }),
                };
                Ok((e, start.elapsed().as_secs_f64(), hands))
            })
            .collect::<Result<_, RunError>>()
    })?;
    bar.finish_and_clear();
    if let Some(out) = out {
        for (&(c, opponent), (_, _, hands)) in jobs.iter().zip(&results) {
            let a = columns[c].per_state.name();
            let b = ["uniform", "always-call"][opponent];
            for (history, a_seat) in hands {
                let names = if *a_seat == 0 {
                    [a.as_str(), b]
                } else {
                    [b, a.as_str()]
                };
                out.write(names, history)
                    .map_err(|source| RunError::Failed {
                        context: "--hands-out".into(),
                        source,
                    })?;
            }
        }
    }
    Ok(results
        .chunks(2)
        .map(|p| (p[0].0.clone(), p[1].0.clone(), [p[0].1, p[1].1]))
        .collect())
}

/// Computes the scorecard of `opts.policy` (see the module docs). Bad options, a game that is
/// not heads-up Hold'em with FCPA actions, and a policy that is missing, corrupt or of another
/// game are refused, naming them, before anything is played.
pub fn scorecard(opts: &ScorecardOptions) -> Result<Scorecard, RunError> {
    let start = Instant::now();
    let (game, columns) = prepare(opts)?;
    let seeds = Seeds::of(opts.seed);
    let lbr_opts = |variant: LbrVariant, rule: LbrRule| LbrOptions {
        variant,
        hands: opts.hands,
        seed: seeds.lbr(variant),
        threads: opts.threads,
        preflop_samples: opts.preflop_samples,
        defer_range_updates: true,
        rule,
        // Every LBR row is paired with LBR against uniform on the same deals.
        keep_deal_means: true,
    };
    // Every (rule, variant) LBR row, the standard rule's first.
    let lbr_rows: Vec<(LbrRule, LbrVariant)> = LbrVariant::ALL
        .into_iter()
        .map(|v| (LbrRule::Standard, v))
        .chain(
            SHARP_VARIANTS
                .into_iter()
                .filter(|_| opts.sharp_lbr)
                .map(|v| (LbrRule::Sharp, v)),
        )
        .collect();
    let mut out = opts
        .hands_out
        .as_deref()
        .map(|path| HandsOut::create(&game, path))
        .transpose()?;
    let mut rows = BTreeMap::new();
    let mut uniform = Vec::new();
    for &(rule, v) in &lbr_rows {
        let label = format!("{} vs uniform", rule.label(v));
        let r = lbr_recorded(
            &game,
            &UniformPolicy,
            &lbr_opts(v, rule),
            &label,
            out.as_mut(),
        )?;
        rows.insert(format!("uniform/{}", row_key(rule, v)), r.seconds);
        uniform.push(r);
    }
    let played = matches(&game, &columns, opts, &seeds, out.as_mut())?;
    let mut policies = BTreeMap::new();
    for (column, (vs_uniform, vs_always_call, secs)) in columns.iter().zip(played) {
        rows.insert(format!("{}/vs_uniform", column.name), secs[0]);
        rows.insert(format!("{}/vs_always_call", column.name), secs[1]);
        let (mut lbr, mut lbr_sharp) = (BTreeMap::new(), BTreeMap::new());
        for (&(rule, v), reference) in lbr_rows.iter().zip(&uniform) {
            let label = format!("{} vs {}", rule.label(v), column.name);
            let policy = column.per_range.as_ref();
            let r = lbr_recorded(&game, policy, &lbr_opts(v, rule), &label, out.as_mut())?;
            rows.insert(format!("{}/{}", column.name, row_key(rule, v)), r.seconds);
            let ratio = paired_ratio(&r, reference);
            let table = match rule {
                LbrRule::Standard => &mut lbr,
                LbrRule::Sharp => &mut lbr_sharp,
            };
            table.insert(
                v.name().to_string(),
                LbrRow {
                    estimate: estimate(&r),
                    ratio: ratio.as_ref().map(|q| q.ratio),
                    ratio_ci95: ratio.as_ref().map(|q| q.ci95),
                    breakdown: opts.breakdown.then(|| r.breakdown.clone()),
                },
            );
        }
        policies.insert(
            column.name.to_string(),
            PolicyCard {
                argument: column.argument.clone(),
                policy: column.per_state.name(),
                vs_uniform,
                vs_always_call,
                lbr,
                lbr_sharp,
            },
        );
    }
    if let Some(out) = out {
        out.finish()?;
    }
    Ok(Scorecard {
        game: game.load_string(),
        policy: opts.policy.clone(),
        seed: opts.seed,
        hands: uniform[0].hands,
        match_hands: opts.match_hands.div_ceil(2) * 2,
        preflop_samples: opts.preflop_samples,
        unit: "mbb/hand".into(),
        seeds,
        lbr_uniform: uniform_rows(&lbr_rows, &uniform, LbrRule::Standard),
        lbr_sharp_uniform: uniform_rows(&lbr_rows, &uniform, LbrRule::Sharp),
        policies,
        timing: Timing {
            seconds: start.elapsed().as_secs_f64(),
            rows,
        },
    })
}

/// The variants the sharp rule is scored with: those that raise (sharp LBR-FC is LBR-FC).
const SHARP_VARIANTS: [LbrVariant; 2] = [LbrVariant::Fcpa, LbrVariant::Fc12Fcpa34];

/// The timing key of an LBR row: `lbr_fcpa`, `lbr_sharp_fcpa`.
fn row_key(rule: LbrRule, v: LbrVariant) -> String {
    match rule {
        LbrRule::Standard => format!("lbr_{v}"),
        LbrRule::Sharp => format!("lbr_sharp_{v}"),
    }
}

/// LBR against uniform with `rule`, by variant name.
fn uniform_rows(
    rows: &[(LbrRule, LbrVariant)],
    uniform: &[LbrResult],
    rule: LbrRule,
) -> BTreeMap<String, Estimate> {
    rows.iter()
        .zip(uniform)
        .filter(|((r, _), _)| *r == rule)
        .map(|((_, v), r)| (v.name().to_string(), estimate(r)))
        .collect()
}

/// `armac-eval scorecard`: computes the scorecard, prints it (the table, or one JSON object
/// on one line with `json`) and writes the JSON object, indented, to `out` when given. `out`'s
/// directory is checked before anything is played.
pub fn command(opts: &ScorecardOptions, json: bool, out: Option<&Path>) -> Result<(), RunError> {
    if let Some(out) = out {
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) || out.is_dir() {
            return Err(RunError::Usage(format!(
                "--out {}: not a file in an existing directory",
                out.display()
            )));
        }
    }
    let card = scorecard(opts)?;
    if crate::run::external_interrupt_flag().load(std::sync::atomic::Ordering::Relaxed) {
        // Some row holds a partial figure: a scorecard is whole or nothing.
        return Err(RunError::Usage(
            "the scorecard was stopped before its last evaluation ended; nothing written".into(),
        ));
    }
    let value = serde_json::to_value(&card).expect("a scorecard serialises");
    if json {
        println!("{value}");
    } else {
        print!("{}", card.to_text(&opts.game));
    }
    if let Some(out) = out {
        let text = serde_json::to_string_pretty(&value).expect("a scorecard serialises");
        crate::util::write_atomic(out, format!("{text}\n").as_bytes())
            .map_err(crate::run::io_err("the scorecard", out))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_the_documented_offsets() {
        let s = Seeds::of(10);
        assert_eq!(
            [
                s.vs_uniform,
                s.vs_always_call,
                s.lbr_fc,
                s.lbr_fcpa,
                s.lbr_fc12_fcpa34
            ],
            [10, 11, 12, 13, 14]
        );
        assert_eq!(s.lbr(LbrVariant::Fcpa), 13);
        assert_eq!(Seeds::of(u64::MAX).lbr_fc, 1);
    }

    #[test]
    fn columns_follow_the_argument() {
        assert_eq!(columns("current:x"), vec![("current", "current:x".into())]);
        assert_eq!(columns("sog:x"), vec![("search", "sog:x".into())]);
        assert_eq!(columns("uniform"), vec![("policy", "uniform".into())]);
        let dir = std::env::temp_dir();
        let d = dir.display().to_string();
        assert_eq!(
            columns(&d),
            vec![("average", d.clone()), ("current", format!("current:{d}"))]
        );
    }
}

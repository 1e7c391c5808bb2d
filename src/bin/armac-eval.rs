//! `armac-eval`: evaluation and debugging tools.
//! * `replay --game G --actions a,b,c [--policy P] [--json]`: every prefix of an action
//!   sequence (with `--policy`, the policy's probabilities at each decision).
//! * `nashconv --game G --policy <uniform|first-legal|file.json> [--max-histories H] [--json]`:
//!   exact NashConv; games with more than H histories (default 20 M) are refused.
//! * `lbr --game hunl_fcpa --policy <uniform|always-call|always-fold|file.json|ARMAC run dir>
//!   --variant <fc|fcpa|fc12-fcpa34> --hands N [--seed S] [--threads T] [--json]
//!   [--logdir DIR --step N]`: local best response (Lisý & Bowling 2017) in chips and mbb per
//!   hand with a 95% confidence interval; `--logdir` adds the result to TensorBoard as
//!   `lbr/<variant>` (mbb/hand) at step `--step`; `--reference uniform` also plays LBR
//!   against the reference on the same deals and reports the ratio with a paired 95% interval.
//! * `lbr ... --variant all` (or `fc,fcpa`): each variant in turn, one report each; with
//!   `--watch RUN`, every checkpoint against each variant; `--hands-out FILE.phhs` writes
//!   every hand LBR plays in the Poker Hand History format.
//! * `scorecard --policy <model|run dir|current:DIR|sog:DIR> [--hands N] [--match-hands M]
//!   [--seed S] [--threads T] [--json] [--out FILE] [--hands-out FILE.phhs]`: the scorecard
//!   of a heads-up no-limit Hold'em policy ([`armac::run::evaluate::scorecard`]).
//! * `match --game G --a <policy> --b <policy> [--hands N] [--seed S] [--json]
//!   [--hands-out FILE.phhs]`: head-to-head, both seats: exact expected payoff on games whose
//!   tree compiles, otherwise N hands as duplicate deals (mean and 95% CI, in chips and, for
//!   poker, mbb/hand); `--hands-out` writes every hand in the Poker Hand History format.
//! * `search-nashconv --game G [--simulations S] [--seed N] [--oracle-iterations K]
//!   [--max-histories H] [--json]`: exact NashConv of continual re-solving with GT-CFR at every
//!   decision (Student of Games) and exact leaf values ([`armac::search::search_nash_conv`]).
//! * `search-nashconv --run DIR [--simulations S] [--json]`: the same with the CVPN of a
//!   Student of Games run at the frontier ([`armac::run::sog::evaluate_run`]).
//! * `export-onnx --policy <model|run dir|current:DIR> [--head average|current]
//!   [--play-threshold T] --out FILE.onnx`: the policy an ARMAC network plays as an ONNX model
//!   ([`armac::nn::armac::ArmacPolicyNet::to_onnx`]).
//! * `serve --policy <model|run dir|policy file> [--policy ...] [--port 8080] [--host H]`: a
//!   local web page with strategy charts, learning curves and play against the policies
//!   ([`armac::serve`]).

use anyhow::Result;
use armac::eval::lbr::LbrRule;
use armac::run::evaluate::commands;
use armac::run::evaluate::lbr_command::LbrCommand;
use armac::run::evaluate::scorecard::{self, ScorecardOptions};
use armac::run::evaluate::{AivatValues, MatchOptions, PolicyArgs};
use armac::search::SearchEval;
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "armac-eval",
    version,
    about = "Evaluate policies and inspect games"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

/// How the ARMAC networks a command loads play (nashconv, match, lbr, scorecard).
#[derive(clap::Args, Debug, Clone, Copy)]
struct PlayFlags {
    /// ARMAC networks: play with this threshold (actions below it dropped, the rest
    /// renormalised) instead of the checkpoint's `armac.play_threshold`; 0 plays the
    /// network's probabilities as they are.
    #[arg(long)]
    play_threshold: Option<f64>,
    /// ARMAC networks on heads-up poker: answer every decision of the last betting round
    /// from a solve of that round (CFR+ with this many iterations, both players' ranges from
    /// the network's play before it; see docs/evaluation.md).
    #[arg(long)]
    endgame: Option<usize>,
    /// With --endgame: safe re-solving (the opponent may leave each solve with the value the
    /// network's own play gives its hand: the CFR-D gadget).
    #[arg(long)]
    endgame_safe: bool,
    /// With --endgame: solve the last this many betting rounds instead of the last one (2 on
    /// Hold'em: the turn and the river, every river card dealt in each solve).
    #[arg(long, value_name = "R")]
    endgame_rounds: Option<usize>,
}

impl PlayFlags {
    /// The loader's arguments, with `search_iterations` for `sog:` policies.
    fn args(&self, search_iterations: Option<usize>) -> PolicyArgs {
        PolicyArgs {
            search_iterations,
            play_threshold: self.play_threshold,
            endgame_iterations: self.endgame,
            endgame_safe: self.endgame_safe,
            endgame_rounds: self.endgame_rounds,
        }
    }
}

/// `export-onnx --head`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum OnnxHead {
    /// The average policy (average-policy head).
    Average,
    /// The current policy (regret matching on the mean-regret head).
    Current,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print, for every prefix of an action sequence, the player to move, the legal actions and
    /// both information-state strings (and the returns at the end).
    Replay {
        /// Game name or OpenSpiel game string.
        #[arg(long)]
        game: String,
        /// Comma-separated actions, chance outcomes included (e.g. 0,1,1,0).
        #[arg(long, allow_hyphen_values = true)]
        actions: String,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Also print this policy's probabilities of the legal actions at every decision
        /// (same forms as `match --a`: `uniform`, a policy file, a run or model directory).
        #[arg(long)]
        policy: Option<String>,
    },
    /// Exact NashConv of a policy.
    Nashconv {
        /// Game name or OpenSpiel game string.
        #[arg(long)]
        game: String,
        /// `uniform`, `first-legal`, an OpenSpiel-format policy JSON file, or an ARMAC run or
        /// model directory (`current:DIR`: its current policy).
        #[arg(long)]
        policy: String,
        /// One JSON object with per-player values.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        play: PlayFlags,
        /// Refuse games with more histories than this (counted, with an early exit at the
        /// cap, before the tree is compiled; its time and memory grow with the histories).
        #[arg(long, default_value_t = EXACT_MAX_HISTORIES)]
        max_histories: usize,
    },
    /// Write the average-policy head of an ARMAC checkpoint (small games), or the search
    /// policy of a Student of Games run (`sog:DIR`), as an OpenSpiel-format policy JSON file.
    ExportPolicy {
        /// An ARMAC run directory (its latest checkpoint) or its `checkpoint/` directory, or
        /// `sog:DIR` for a Student of Games run.
        #[arg(long)]
        checkpoint: std::path::PathBuf,
        /// Output file.
        #[arg(long)]
        out: std::path::PathBuf,
        /// ARMAC networks: play with this threshold (actions below it dropped, the rest
        /// renormalised) instead of the checkpoint's `armac.play_threshold`; 0 plays the
        /// network's probabilities as they are.
        #[arg(long)]
        play_threshold: Option<f64>,
        /// Refuse games with more histories than this (counted, with an early exit at the
        /// cap, before the tree is compiled).
        #[arg(long, default_value_t = EXACT_MAX_HISTORIES)]
        max_histories: usize,
    },
    /// Copy a checkpoint's policy (a run directory, its `checkpoint/`, or a model) into a new
    /// model directory with a manifest, every file verified first: the checkpoint's
    /// `state.json`, `config.toml` and its network (an ARMAC run's network of its epoch; a
    /// Student of Games run's CVPN in half precision, scored as `sog:DIR`).
    ExportModel {
        /// An ARMAC or Student of Games run directory, its `checkpoint/`, or a model directory.
        #[arg(long)]
        checkpoint: PathBuf,
        /// The model directory to create (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// ARMAC networks: write `armac.play_threshold = T` into the model's config (how it
        /// plays: actions below T dropped, the rest renormalised; the network is the same).
        #[arg(long)]
        play_threshold: Option<f64>,
    },
    /// Write the policy an ARMAC network plays as an ONNX model: information-state tensors
    /// and legal-action masks in, the probabilities armac plays out (input scaling, masking
    /// and the play threshold inside the graph). Feed-forward networks only.
    ExportOnnx {
        /// An ARMAC model, run or checkpoint directory (`current:DIR`: its current policy).
        #[arg(long)]
        policy: String,
        /// The head: `average` (the average policy, the default) or `current` (regret
        /// matching on the mean-regret head).
        #[arg(long, value_enum)]
        head: Option<OnnxHead>,
        /// Play with this threshold instead of the checkpoint's `armac.play_threshold` (0:
        /// the head's probabilities as they are).
        #[arg(long)]
        play_threshold: Option<f64>,
        /// The `.onnx` file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Check a model directory against its `manifest.json` (every file's length and hash),
    /// or with `--write` record the files it holds now.
    Manifest {
        /// The model directory.
        dir: PathBuf,
        /// Write (or rewrite) the manifest instead of checking it.
        #[arg(long)]
        write: bool,
    },
    /// Head-to-head match of policy A against policy B, both seats: exact on games whose tree
    /// compiles (Kuhn, Leduc, Liar's Dice, ...), otherwise `--hands` hands played as duplicate
    /// deals (every deal twice, seats swapped).
    Match {
        /// Game name or OpenSpiel game string.
        #[arg(long, default_value = "hunl_fcpa")]
        game: String,
        /// Policy A: `uniform`, `first-legal`, `always-call`, `always-fold`, an
        /// OpenSpiel-format policy JSON file, an ARMAC run / checkpoint directory (its
        /// average-policy head; `current:DIR` plays its current policy pi^t, the mean-regret
        /// head's regret matching), or `sog:DIR` (a Student of Games run; for Hold'em: search
        /// with the CVPN checkpoint directory DIR).
        #[arg(long)]
        a: String,
        /// Policy B (same choices as A).
        #[arg(long)]
        b: String,
        /// Hands of a sampled match (rounded up to an even number: one deal is two hands).
        #[arg(long, default_value_t = 10_000)]
        hands: u64,
        /// Seed of the deals and of the policies' action draws.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Sample even where the exact value is computable.
        #[arg(long)]
        sampled: bool,
        /// One JSON object.
        #[arg(long)]
        json: bool,
        /// CFR+ iterations per search of a Hold'em `sog:DIR` policy (default: the `sog.search.s`
        /// it trained with; 200 for a bare CVPN directory).
        #[arg(long)]
        search_iterations: Option<usize>,
        #[command(flatten)]
        play: PlayFlags,
        /// Exact matches: refuse games with more histories than this (counted, with an early
        /// exit at the cap, before the tree is compiled); `--sampled` plays hands instead.
        #[arg(long, default_value_t = EXACT_MAX_HISTORIES)]
        max_histories: usize,
        /// Write every hand to this file in the Poker Hand History format (PHH, a `.phhs`
        /// file; heads-up no-limit Texas hold'em only).
        #[arg(long, value_name = "FILE")]
        hands_out: Option<PathBuf>,
        /// Sampled matches: also report AIVAT (an unbiased, variance-reduced estimate of the
        /// same mean, on the same hands) with the critic of the ARMAC network that --a or --b
        /// names as its value estimate (refused when neither is a feed-forward ARMAC network).
        #[arg(long)]
        aivat: bool,
        /// AIVAT's value estimate: `pair` (the two policies' own values through the rest of
        /// each betting round and exactly on the last one, the critic at the start of the
        /// others) or `critic` (the critic alone, over the network's average policy).
        #[arg(long, default_value = "pair", value_parser = parse_aivat_values)]
        aivat_values: AivatValues,
    },
    /// Exact NashConv of Student of Games search: continual re-solving with GT-CFR at every
    /// decision of both players, frontier values from an exact subgame oracle, assembled into
    /// a whole-game policy (one search per decision public node, seeded by the node).
    SearchNashconv {
        /// Game name or OpenSpiel game string (its whole tree must compile); with `--run`, it
        /// must be the run's game.
        #[arg(long, required_unless_present = "run")]
        game: Option<String>,
        /// A Student of Games run directory: its CVPN (committed checkpoint) answers the
        /// frontier queries instead of the exact oracle, with the run's search settings.
        #[arg(long)]
        run: Option<PathBuf>,
        /// Expansion simulations per search (at least 1; one CFR+ update per simulation).
        /// Default: 100 with the oracle, the run's `sog.search.s` with `--run`.
        #[arg(long, value_parser = parse_simulations)]
        simulations: Option<usize>,
        /// Run seed (each search's seed derives from it and its public node).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// CFR+ iterations of each exact leaf solve (at least 1).
        #[arg(long, default_value_t = 200)]
        oracle_iterations: usize,
        /// Refuse games with more histories than this.
        #[arg(long, default_value_t = 1_000_000)]
        max_histories: usize,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Local best response (LBR) against a policy in heads-up no-limit Hold'em: LBR's
    /// winnings per hand over both seats, with a 95% confidence interval.
    Lbr(LbrArgs),
    /// The scorecard of a heads-up no-limit Hold'em policy: duplicate matches against uniform
    /// and always-call, and LBR-FC, LBR-FCPA and LBR-FC12-FCPA34 each with its ratio to LBR
    /// against uniform on the same deals, on seeds derived from --seed (matches: S and S+1;
    /// LBR: S+2, S+3, S+4); an ARMAC run or model directory is scored as its average and its
    /// current policy.
    Scorecard(ScorecardArgs),
    /// A local web page (HTTP on --host:--port) with each policy's strategy (Hold'em: 13x13
    /// preflop and per-board charts; small games: every information state), play against it,
    /// and a run directory's learning curves.
    Serve {
        /// An ARMAC model or run directory (both its average and its current policy are
        /// served), an OpenSpiel-format policy file, or uniform / always-call / always-fold
        /// (for --game); repeat for several.
        #[arg(long, required = true)]
        policy: Vec<String>,
        /// The game of the baseline policies (uniform, ...).
        #[arg(long, default_value = "hunl_fcpa")]
        game: String,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port (0: any free port; the address is printed).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Worker threads answering requests.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Seed of the play sessions (each derives its own).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Access token every request must carry (8-256 letters and digits): in the address
        /// as ?token=T (the page then keeps it in a cookie) or as `Authorization: Bearer T`.
        /// Bound beyond loopback the server always needs one and draws a random one when
        /// this is not given; the address printed at start carries it.
        #[arg(long)]
        token: Option<String>,
    },
}

/// How LBR spreads and samples its work (`lbr`, `scorecard`).
#[derive(clap::Args, Debug, Clone, Copy)]
struct LbrWork {
    /// Worker threads (default: one per core; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = parse_threads)]
    threads: usize,
    /// Sampled (hand, board) pairs per pre-flop equity of LBR (at least 1).
    #[arg(long, default_value_t = armac::eval::lbr::DEFAULT_PREFLOP_SAMPLES, value_parser = parse_samples)]
    preflop_samples: usize,
}

/// `armac-eval lbr` (see [`Command::Lbr`]).
#[derive(clap::Args, Debug)]
struct LbrArgs {
    /// Game name or OpenSpiel game string (heads-up Hold'em with fc or fcpa actions).
    #[arg(long, default_value = "hunl_fcpa")]
    game: String,
    /// `uniform`, `always-call`, `always-fold`, an OpenSpiel-format policy JSON file, or an
    /// ARMAC run directory / checkpoint directory (its average-policy network, queried for
    /// whole ranges in one batch; `current:DIR`: its current policy pi^t, regret matching
    /// on the mean-regret head, feed-forward networks only).
    #[arg(long, required_unless_present = "watch", conflicts_with = "watch")]
    policy: Option<String>,
    /// Follow an ARMAC run directory (training or finished): evaluate its newest checkpoint,
    /// then each new one as it is committed, writing `lbr/<variant>` to the run's
    /// TensorBoard (x axis: epoch) and a row to `<RUN>/lbr_<variant>.csv`; ends when the run
    /// has ended and its last checkpoint is evaluated.
    #[arg(long, value_name = "RUN")]
    watch: Option<PathBuf>,
    /// With --watch: evaluate every checkpoint that appears, not only the newest one each
    /// time an evaluation finishes.
    #[arg(long, requires = "watch")]
    every_checkpoint: bool,
    /// With --watch: seconds between looks at the run directory.
    #[arg(long, default_value_t = 5.0, requires = "watch")]
    poll_seconds: f64,
    /// Actions LBR may take: `fc`, `fcpa` or `fc12-fcpa34`; a comma list of them or `all`
    /// runs each in turn on the same seed (one report per variant; with --watch, every
    /// checkpoint against each, `lbr/<variant>` and `<RUN>/lbr_<variant>.csv` for each).
    #[arg(long)]
    variant: String,
    /// How LBR values a raise that is not folded to: `standard` (Lisý & Bowling's Algorithm
    /// 1, equity against the whole range, no re-raise) or `sharp` (equity against the hands
    /// that call, the policy's re-raises expected; see docs/evaluation.md). With `sharp` the
    /// curves are `lbr/sharp_<variant>` and `<RUN>/lbr_sharp_<variant>.csv`.
    #[arg(long, default_value = "standard", value_parser = parse_rule)]
    rule: LbrRule,
    /// Number of hands (rounded up to a multiple of 4: each deal is played in both seats
    /// with both card assignments).
    #[arg(long)]
    hands: u64,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    work: LbrWork,
    /// One JSON object (mean, ci95 in mbb/hand, hands, variant, seconds, ...).
    #[arg(long)]
    json: bool,
    /// Run directory: also write the result as TensorBoard scalars `lbr/<variant>` and
    /// `lbr/<variant>_ci95` (mbb/hand).
    #[arg(long)]
    logdir: Option<PathBuf>,
    /// Training step of the evaluated policy (the TensorBoard x axis).
    #[arg(long, default_value_t = 0)]
    step: u64,
    /// ARMAC networks: answer range queries hand by hand, replaying every hand from the
    /// root (the slow reference path), instead of computing each public state once for
    /// all 1326 hands and keeping it.
    #[arg(long)]
    replay_ranges: bool,
    /// Also run LBR against this policy (same forms as --policy, e.g. `uniform`) on the
    /// same deals, once, and report LBR(policy) / LBR(reference) with a 95% confidence
    /// interval from the paired deals (with --watch: for every checkpoint, also written
    /// to TensorBoard as `lbr/<variant>_ratio`).
    #[arg(long, value_name = "POLICY")]
    reference: Option<String>,
    /// CFR+ iterations per search of a Hold'em `sog:DIR` policy (default: the `sog.search.s`
    /// it trained with; 200 for a bare CVPN directory).
    #[arg(long)]
    search_iterations: Option<usize>,
    #[command(flatten)]
    play: PlayFlags,
    /// Also print where LBR's winnings come from: its hands grouped by how they ended (who
    /// folded in which round; showdowns all in or not, by who bet last in which round),
    /// each group's share of the mean and its mean per hand (with --json: `breakdown`).
    #[arg(long)]
    breakdown: bool,
    /// Write every hand LBR plays against --policy (each variant in turn; not the
    /// reference's) to this file in the Poker Hand History format (PHH, a `.phhs` file).
    #[arg(long, value_name = "FILE")]
    hands_out: Option<PathBuf>,
}

impl LbrArgs {
    /// The library's settings of the command.
    fn command(self) -> LbrCommand {
        LbrCommand {
            game: self.game,
            policy: self.policy,
            watch: self.watch,
            every_checkpoint: self.every_checkpoint,
            poll_seconds: self.poll_seconds,
            variant: self.variant,
            rule: self.rule,
            hands: self.hands,
            seed: self.seed,
            threads: self.work.threads,
            preflop_samples: self.work.preflop_samples,
            json: self.json,
            logdir: self.logdir,
            step: self.step,
            replay_ranges: self.replay_ranges,
            reference: self.reference,
            breakdown: self.breakdown,
            play: self.play.args(self.search_iterations),
            hands_out: self.hands_out,
        }
    }
}

/// `armac-eval scorecard` (see [`Command::Scorecard`]).
#[derive(clap::Args, Debug)]
struct ScorecardArgs {
    /// An ARMAC run / model directory (both its average and its current policy),
    /// `current:DIR` (only the current policy), `sog:DIR` (Student of Games search), or
    /// any other `lbr` policy (`uniform`, `always-call`, a policy file).
    #[arg(long)]
    policy: String,
    /// Game name or OpenSpiel game string (heads-up no-limit Hold'em with fcpa actions).
    #[arg(long, default_value = "hunl_fcpa")]
    game: String,
    /// LBR hands per row (rounded up to a multiple of 4).
    #[arg(long, default_value_t = scorecard::DEFAULT_HANDS)]
    hands: u64,
    /// Hands per match (rounded up to an even number).
    #[arg(long, default_value_t = scorecard::DEFAULT_MATCH_HANDS)]
    match_hands: u64,
    /// The scorecard's seed (every row's seed derives from it).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    work: LbrWork,
    /// CFR+ iterations per search of a Hold'em `sog:DIR` policy (default: the `sog.search.s`
    /// it trained with; 200 for a bare CVPN directory).
    #[arg(long)]
    search_iterations: Option<usize>,
    #[command(flatten)]
    play: PlayFlags,
    /// Also show where each LBR row's winnings come from: its hands grouped by how they
    /// ended, as `lbr --breakdown` does (with --json: each row's `breakdown`).
    #[arg(long)]
    breakdown: bool,
    /// Also score the policy with the sharp LBR rule (`lbr --rule sharp`): rows `sharp
    /// LBR-FCPA` and `sharp LBR-FC12-FCPA34` below Lisý & Bowling's rows, each with its
    /// ratio to the sharp LBR against uniform on the same deals (LBR-FC never raises, so its
    /// sharp row would be the same).
    #[arg(long)]
    sharp_lbr: bool,
    /// Write every hand the scorecard plays (its matches and LBR rows, in the table's order)
    /// to this file in the Poker Hand History format (PHH, a `.phhs` file).
    #[arg(long, value_name = "FILE")]
    hands_out: Option<PathBuf>,
    /// Also report the AIVAT estimate of each match beside its plain mean (an unbiased,
    /// variance-reduced estimate on the same hands), for the columns that are feed-forward
    /// ARMAC networks (their critic) or Student of Games policies (their value network). Off
    /// by default: it costs the matches several times their time.
    #[arg(long)]
    aivat: bool,
    /// With --aivat, AIVAT's value estimate for ARMAC networks: `critic` (the critic alone,
    /// over the network's average policy; about 8 times a plain match's CPU time per hand) or
    /// `pair` (the two policies' own values through the rest of each betting round and
    /// exactly on the last one, the critic at the start of the others; narrower intervals at
    /// about 140-150 times the CPU time per hand). A `sog:DIR` column uses its CVPN.
    #[arg(long, default_value = "critic", value_parser = parse_aivat_values, requires = "aivat")]
    aivat_values: AivatValues,
    /// One JSON object (the `scorecard` field of a shipped model's score.json).
    #[arg(long)]
    json: bool,
    /// Also write the JSON object (indented) to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

impl ScorecardArgs {
    /// The library's settings of the command.
    fn options(&self) -> ScorecardOptions {
        ScorecardOptions {
            game: self.game.clone(),
            policy: self.policy.clone(),
            hands: self.hands,
            match_hands: self.match_hands,
            seed: self.seed,
            threads: self.work.threads,
            preflop_samples: self.work.preflop_samples,
            play: self.play.args(self.search_iterations),
            breakdown: self.breakdown,
            sharp_lbr: self.sharp_lbr,
            hands_out: self.hands_out.clone(),
            aivat: self.aivat.then_some(self.aivat_values),
        }
    }
}

fn main() {
    armac::util::tune_allocator();
    let args = Args::parse();
    // The long evaluations stop on Ctrl-C (or SIGTERM) after the deal in play and report the
    // hands played so far as partial; a second signal ends the process at once.
    if matches!(
        args.command,
        Command::Lbr(_) | Command::Match { .. } | Command::Scorecard(_)
    ) {
        armac::run::interrupt_flag();
    }
    let result = run(args);
    if let Some(sig) = armac::run::interrupt_signal() {
        match &result {
            Ok(()) => eprintln!(
                "interrupted by signal {sig}: the figures above are partial (the hands played \
                 before it)"
            ),
            Err(e) => eprintln!("error: {e:#}\ninterrupted by signal {sig}: no result"),
        }
        std::process::exit(128 + sig);
    }
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Replay {
            game,
            actions,
            json,
            policy,
        } => print(commands::replay(&game, &actions, policy.as_deref())?, json),
        Command::Nashconv {
            game,
            policy,
            json,
            play,
            max_histories,
        } => print(
            commands::nashconv(&game, &policy, play.args(None), max_histories)?,
            json,
        ),
        Command::SearchNashconv {
            game,
            run: Some(dir),
            simulations,
            json,
            ..
        } => print(
            commands::search_nashconv_run(&dir, game.as_deref(), simulations)?,
            json,
        ),
        Command::SearchNashconv {
            game,
            run: None,
            simulations,
            seed,
            oracle_iterations,
            max_histories,
            json,
        } => {
            let mut eval = SearchEval {
                oracle_iterations,
                max_histories,
                ..SearchEval::default()
            };
            eval.resolver.search.simulations = simulations.unwrap_or(100);
            eval.resolver.search.seed = seed;
            let game = game.expect("clap requires --game without --run");
            print(commands::search_nashconv(&game, &eval)?, json)
        }
        Command::Match {
            game,
            a,
            b,
            hands,
            seed,
            sampled,
            json,
            search_iterations,
            play,
            max_histories,
            hands_out,
            aivat,
            aivat_values,
        } => {
            let opts = MatchOptions {
                hands,
                seed,
                sampled,
                max_histories,
                aivat,
                aivat_values,
            };
            let args = play.args(search_iterations);
            let report =
                commands::head_to_head(&game, (&a, &b), &opts, args, hands_out.as_deref())?;
            print(report, json)
        }
        Command::ExportModel {
            checkpoint,
            out,
            play_threshold,
        } => export_model(&checkpoint, &out, play_threshold),
        Command::ExportOnnx {
            policy,
            head,
            play_threshold,
            out,
        } => {
            let current = head.map(|h| h == OnnxHead::Current);
            println!(
                "{}",
                commands::export_onnx(&policy, current, play_threshold, &out)?
            );
            Ok(())
        }
        Command::Manifest { dir, write } => manifest(&dir, write),
        Command::ExportPolicy {
            checkpoint,
            out,
            play_threshold,
            max_histories,
        } => {
            let line = commands::export_policy(&checkpoint, &out, play_threshold, max_histories)?;
            println!("{line}");
            Ok(())
        }
        Command::Lbr(args) => Ok(armac::run::evaluate::lbr_command::run(&args.command())?),
        Command::Scorecard(args) => Ok(scorecard::command(
            &args.options(),
            args.json,
            args.out.as_deref(),
        )?),
        Command::Serve {
            policy,
            game,
            host,
            port,
            threads,
            seed,
            token,
        } => serve(armac::serve::ServeOptions {
            policies: policy,
            game,
            host,
            port,
            threads,
            seed,
            token,
        }),
    }
}

/// Prints a report as text or JSON.
fn print(report: commands::Report, as_json: bool) -> Result<()> {
    println!("{}", report.render(as_json));
    Ok(())
}

fn export_model(checkpoint: &Path, out: &Path, play_threshold: Option<f64>) -> Result<()> {
    let m = armac::run::model::export_model_with(checkpoint, out, play_threshold)?;
    println!(
        "wrote {} ({} files and manifest.json)",
        out.display(),
        m.files.len()
    );
    Ok(())
}

fn manifest(dir: &Path, write: bool) -> Result<()> {
    let n = if write {
        armac::run::model::write_manifest(dir)?.files.len()
    } else {
        armac::run::model::verify_model(dir)?.len()
    };
    let did = if write { "recorded" } else { "verified" };
    println!("{}: {n} files {did}", dir.display());
    Ok(())
}

fn serve(opts: armac::serve::ServeOptions) -> Result<()> {
    let server = armac::serve::Server::bind(&opts)?;
    if let Some(w) = server.exposure_warning() {
        eprintln!("{w}");
    }
    println!("armac-eval serve: listening on {}", server.url());
    use std::io::Write as _;
    std::io::stdout().flush()?;
    server.run();
    Ok(())
}

/// Default `--max-histories` of the exact evaluations (`nashconv`, `export-policy`, exact
/// `match`): the tree compiler's own cap. Every game the tests and shipped models evaluate
/// exactly fits (the tiny Hold'em has 5.6 M histories), Hold'em and `liars_dice(numdice=3)`
/// do not (refused after counting to the cap, about 2 s).
const EXACT_MAX_HISTORIES: usize = armac::tree::DEFAULT_MAX_HISTORIES;

/// `--simulations`: at least 1.
fn parse_simulations(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a positive number of simulations")),
    }
}

/// `--threads`: 0 (one per core) up to 1024.
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a thread count in 0..=1024 (0: one per core)"
        )),
    }
}

/// `--aivat-values`: `pair` or `critic`.
fn parse_aivat_values(s: &str) -> Result<AivatValues, String> {
    AivatValues::parse(s)
        .ok_or_else(|| format!("`{s}` is not an AIVAT value estimate (pair or critic)"))
}

/// `--rule`: `standard` or `sharp`.
fn parse_rule(s: &str) -> Result<LbrRule, String> {
    LbrRule::parse(s).ok_or_else(|| format!("`{s}` is not an LBR rule (standard or sharp)"))
}

/// `--preflop-samples`: at least 1 (0 would leave every pre-flop equity undefined).
fn parse_samples(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a positive number of samples")),
    }
}

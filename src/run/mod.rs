//! Runs: configs, run directories, checkpoints, TensorBoard, metrics CSV and progress bars,
//! and the drivers that tie an algorithm to them. The binaries call into this module only.

pub mod armac;
pub mod checkpoint;
pub mod config;
pub mod evaluate;
pub mod generation;
mod lock;
pub mod metrics;
pub mod model;
mod preflight;
pub mod replace;
pub mod resume;
pub mod sog;
pub mod solvers;
pub mod summary;
pub mod tabular;
pub mod tensorboard;
pub mod watch;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::write_atomic;

/// The name of the link in a run directory to its committed checkpoint generation
/// ([`generation`]).
pub const CHECKPOINT_LINK: &str = "checkpoint";

pub use lock::{LOCK_FILE, RunLock};
pub(crate) use lock::{check_run_dir, lock_pid};
pub use preflight::{Algorithm, available_memory_bytes, memory_estimate, tabular_fits, validate};
use preflight::{broker_preflight, redact_config};

/// A default run directory under `runs/`: `<config stem>-<unix seconds>`.
pub fn default_run_dir(config_path: &Path) -> PathBuf {
    let stem = config_path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("run");
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    PathBuf::from("runs").join(format!("{stem}-{secs}"))
}

/// A CSV file of metrics with a fixed header; on resume, rows past the checkpoint are dropped
/// so the file continues exactly where the checkpoint was taken.
pub struct MetricsCsv {
    path: PathBuf,
    file: File,
}

impl MetricsCsv {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, header: &[&str]) -> std::io::Result<MetricsCsv> {
        let mut file = File::create(path)?;
        writeln!(file, "{}", header.join(","))?;
        Ok(MetricsCsv {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Reopens `path` for appending, keeping only complete rows (all columns, ending in a
    /// newline) whose first column (the step) is at most `last_step`; creates it with `header`
    /// if it is missing. Also returns the step of the last row kept. A file that is no regular
    /// file or is over [`crate::util::MAX_LOG_BYTES`] is refused (an error of kind
    /// `InvalidData` naming it), not read.
    pub fn resume(
        path: &Path,
        header: &[&str],
        last_step: u64,
    ) -> std::io::Result<(MetricsCsv, Option<u64>)> {
        let text = match crate::util::read_regular_named(path, crate::util::MAX_LOG_BYTES) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Self::create(path, header)?, None));
            }
            Err(e) => return Err(e),
        };
        let mut kept = format!("{}\n", header.join(","));
        // A file written before columns were added at the end keeps its rows, the new
        // columns left empty.
        let old_len = text
            .lines()
            .next()
            .map(|h| h.split(',').collect::<Vec<_>>())
            .filter(|old| old.len() < header.len() && header.starts_with(old))
            .map_or(header.len(), |old| old.len());
        let pad = ",".repeat(header.len() - old_len);
        let mut last = None;
        for line in text.split_inclusive('\n').skip(1) {
            let Some(row) = line.strip_suffix('\n') else {
                continue; // torn by a stop during the write
            };
            let step = row.split(',').next().and_then(|s| s.parse::<u64>().ok());
            if row.split(',').count() == old_len
                && let Some(step) = step.filter(|&s| s <= last_step)
            {
                kept.push_str(row);
                kept.push_str(&pad);
                kept.push('\n');
                last = Some(step);
            }
        }
        if kept != text {
            write_atomic(path, kept.as_bytes())?;
        }
        let file = crate::util::append_regular(path)?;
        Ok((
            MetricsCsv {
                path: path.to_path_buf(),
                file,
            },
            last,
        ))
    }

    /// Appends one row.
    pub fn row(&mut self, values: &[String]) -> std::io::Result<()> {
        writeln!(self.file, "{}", values.join(","))?;
        self.file.flush()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Ends a run at the next safe point once a wall-clock budget is spent.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    start: Instant,
    budget: Option<Duration>,
    cpu_start: f64,
    cpu_budget: Option<f64>,
}

impl Deadline {
    /// A deadline `seconds` from now (`None`: never).
    pub fn new(seconds: Option<f64>) -> Deadline {
        Deadline {
            start: Instant::now(),
            // A budget too large for a `Duration` is never spent (callers bound it first).
            budget: seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()),
            cpu_start: 0.0,
            cpu_budget: None,
        }
    }

    /// The budgets of `opts`: wall seconds (`--max-seconds`) and CPU seconds of this process,
    /// all threads together (`--max-cpu-seconds`), both counted from now; the first spent
    /// ends the run.
    pub fn of(opts: &TrainOptions) -> Deadline {
        Deadline {
            cpu_start: process_cpu_seconds(),
            cpu_budget: opts.max_cpu_seconds,
            ..Deadline::new(opts.max_seconds)
        }
    }

    /// `true` once a budget is spent.
    pub fn expired(&self) -> bool {
        self.budget.is_some_and(|b| self.start.elapsed() >= b)
            || self.cpu_budget.is_some_and(|b| self.cpu_seconds() >= b)
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// CPU seconds this process used since the start (all threads).
    pub fn cpu_seconds(&self) -> f64 {
        process_cpu_seconds() - self.cpu_start
    }
}

/// How long a step in progress (an ARMAC epoch, a Student of Games round, a solver iteration)
/// may still run once a stop is asked for: one that ends within it is kept (and
/// checkpointed), a longer one is abandoned and the run resumes from its last committed
/// checkpoint.
pub const STOP_GRACE: Duration = Duration::from_millis(500);

/// When a run stops: a budget of [`Deadline`] spent or the interrupt flag set (SIGINT,
/// SIGTERM, SIGHUP, or Python's Ctrl-C). Checked between steps, where a stop is taken at
/// once, and inside a step, where it abandons the step once [`STOP_GRACE`] has passed since
/// the stop was first seen.
pub struct StopRule {
    deadline: Deadline,
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    seen: std::sync::OnceLock<Instant>,
    grace: Duration,
}

impl StopRule {
    /// The rule of `deadline` and `flag` with the grace [`STOP_GRACE`].
    pub fn new(
        deadline: Deadline,
        flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> StopRule {
        StopRule {
            deadline,
            flag,
            seen: std::sync::OnceLock::new(),
            grace: STOP_GRACE,
        }
    }

    /// The deadline the rule watches.
    pub fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    /// Whether a stop is asked for (a budget spent or the flag set).
    pub fn requested(&self) -> bool {
        let asked = self.flag.load(std::sync::atomic::Ordering::Relaxed) || self.deadline.expired();
        if asked {
            self.seen.get_or_init(Instant::now);
        }
        asked
    }

    /// Whether the step in progress is to be abandoned: a stop is asked for and the grace
    /// since it was first seen has passed.
    pub fn abandon(&self) -> bool {
        self.requested() && self.seen.get().is_some_and(|t| t.elapsed() >= self.grace)
    }
}

/// CPU time of this process so far (user and system, all threads), in seconds.
pub fn process_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant libc defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

static INTERRUPT: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();
static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Writes `msg` to stderr from a signal handler (`write(2)` is async-signal-safe).
fn signal_note(msg: &[u8]) {
    // SAFETY: `msg` is a valid buffer of `msg.len()` bytes; fd 2 may be closed, which only
    // makes the write fail.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    if SIGNAL.swap(sig, std::sync::atomic::Ordering::SeqCst) != 0 {
        signal_note(b"second signal: stopping at once\n");
        // SAFETY: `_exit` is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(128 + sig) };
    }
    if let Some(flag) = INTERRUPT.get() {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    signal_note(b"signal received: stopping at the next safe point (again to stop at once)\n");
}

/// A process-wide flag set by SIGINT (Ctrl-C), SIGTERM (what schedulers and `docker stop`
/// send) or SIGHUP: long runs poll it and stop at the next safe point, writing a consistent
/// checkpoint, and `armac-train` then exits with 128 + the signal's number (130 for SIGINT,
/// 143 for SIGTERM, 129 for SIGHUP; see [`interrupt_signal`]). A second signal ends the
/// process at once with the same status. The handlers are installed on first use.
pub fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    INTERRUPT
        .get_or_init(|| {
            let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                // SAFETY: `on_signal` only touches atomics and calls async-signal-safe
                // functions; the sigaction struct is zeroed and then fully set up.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                    libc::sigemptyset(&mut action.sa_mask);
                    action.sa_flags = libc::SA_RESTART;
                    libc::sigaction(sig, &action, std::ptr::null_mut());
                }
            }
            flag
        })
        .clone()
}

/// The flag of [`interrupt_flag`] without installing any signal handler: for a process that
/// handles signals itself (the Python module, whose interpreter owns SIGINT) and sets the flag
/// to stop a run at its next safe point. Handlers already installed by [`interrupt_flag`] stay;
/// the flag is the same either way.
pub fn external_interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    INTERRUPT
        .get_or_init(|| std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)))
        .clone()
}

/// The signal that asked the run to stop (SIGINT, SIGTERM, SIGHUP), if one did.
pub fn interrupt_signal() -> Option<i32> {
    match SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// A progress bar for `total` steps (hidden when stderr is not a terminal).
pub fn progress_bar(total: u64, unit: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    let template =
        format!("{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}) {{msg}}");
    bar.set_style(
        indicatif::ProgressStyle::with_template(&template)
            .expect("valid progress template")
            .progress_chars("=> "),
    );
    bar
}

/// Maps an I/O error on `p` to [`RunError::Io`] saying what was being read or written.
pub(crate) fn io_err(what: &str, p: &Path) -> impl FnOnce(std::io::Error) -> RunError {
    let what = what.to_string();
    let path = p.display().to_string();
    move |source| RunError::Io { what, path, source }
}

/// Reads checkpoint file `path` (`what` it holds, for the error) and decodes it with
/// `decode`; every error names the file.
pub(crate) fn read_checkpoint_file<T, E: std::fmt::Display>(
    path: &Path,
    what: &str,
    decode: impl FnOnce(&[u8]) -> Result<T, E>,
) -> Result<T, RunError> {
    let bytes = std::fs::read(path).map_err(io_err(what, path))?;
    decode(&bytes).map_err(|e| RunError::Usage(format!("{}: {e}", path.display())))
}

/// Errors of a run, each naming what failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Game(#[from] crate::game::GameError),
    #[error(transparent)]
    Tree(#[from] crate::tree::TreeError),
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
    #[error("cannot write {what} at {path}: {source}")]
    Io {
        what: String,
        path: String,
        source: std::io::Error,
    },
    #[error(
        "run directory {0} is not empty; pass --resume {0} to continue its run, --overwrite to replace it, or choose another --out"
    )]
    RunExists(String),
    #[error("{dir} cannot take a new run: {why}; choose another --out (nothing was changed)")]
    NotARun { dir: String, why: String },
    #[error(
        "run directory {dir} is in use by another armac process{holder}; wait for it or stop it"
    )]
    RunLocked { dir: String, holder: String },
    #[error("{0}")]
    Usage(String),
    /// A step of the run failed; `context` says which, `source` why (printed as a chain).
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{0}")]
    Solver(String),
    /// A stop came inside a unit of work (an epoch, round or iteration), which was abandoned;
    /// the run resumes from its last checkpoint.
    #[error("stopped inside a unit of work, which was abandoned")]
    Stopped,
}

impl From<crate::cluster::ClusterError> for RunError {
    /// A bad config value reads as the config error of its key; the rest as broker errors.
    fn from(e: crate::cluster::ClusterError) -> RunError {
        use crate::cluster::ClusterError;
        match e {
            ClusterError::Key { key, reason } => {
                RunError::Config(config::ConfigError::Value { key, reason })
            }
            ClusterError::Usage(s) => RunError::Usage(s),
            e => RunError::context("the broker")(e),
        }
    }
}

impl From<crate::rl::TrainError> for RunError {
    /// Variant by variant.
    fn from(e: crate::rl::TrainError) -> RunError {
        use crate::rl::TrainError;
        match e {
            TrainError::Game(e) => RunError::Game(e),
            TrainError::Tree(e) => RunError::Tree(e),
            TrainError::Io { what, path, source } => RunError::Io { what, path, source },
            TrainError::Usage(s) => RunError::Usage(s),
            TrainError::Failed { context, source } => RunError::Failed { context, source },
            TrainError::Stopped => RunError::Stopped,
        }
    }
}

impl RunError {
    /// Wraps an error of a step of the run with what was being done (for `map_err`).
    pub fn context<E: std::error::Error + Send + Sync + 'static>(
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> RunError {
        let context = context.into();
        move |e| RunError::Failed {
            context,
            source: Box::new(e),
        }
    }
}

/// Options of `armac-train` that are not part of the config.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Run directory (default: `runs/<config>-<time>`).
    pub out: Option<PathBuf>,
    /// End cleanly at the next safe point after this many seconds, still writing all outputs.
    pub max_seconds: Option<f64>,
    /// The same for CPU seconds of the process (all threads together): a budget that does not
    /// depend on what else the machine runs.
    pub max_cpu_seconds: Option<f64>,
    /// Continue the run in `out` from its checkpoint.
    pub resume: bool,
    /// No progress bar or chatter.
    pub quiet: bool,
    /// Replace the run in `out` (a new run only; see [`replace`]).
    pub overwrite: bool,
}

/// A validated checkpoint to resume from, with the config keys the resume changes.
#[derive(Clone, Debug)]
pub struct Resumed {
    /// The committed generation, verified.
    pub generation: generation::Generation,
    /// Config keys (all in [`resume::SAFE_KEYS`]) whose values differ from the checkpoint's.
    pub changed: Vec<String>,
}

/// What a finished (or cleanly stopped) run reports.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunSummary {
    pub run_dir: PathBuf,
    pub game: String,
    pub algorithm: String,
    pub iterations: u64,
    /// NaN where there is no exact evaluation (written as `null`, read back as NaN).
    #[serde(deserialize_with = "nan_from_null")]
    pub nash_conv: f64,
    pub seconds: f64,
    pub stopped_early: bool,
    /// ARMAC: actor steps per second of this process's acting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acting_steps_per_second: Option<f64>,
    /// Peak resident memory of the process in MiB (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_mb: Option<f64>,
    /// CPU seconds of this process (all threads) since the run (or the resume) started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// The run's cumulative budget in the papers' units (ARMAC and the tabular solvers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

/// What a run has spent, cumulative over its resumes, in the units papers state budgets in.
/// Counters an algorithm does not have are absent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// CPU seconds of every process that trained the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// ARMAC: episodes the actors played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episodes: Option<u64>,
    /// ARMAC: decisions of the learning player in learning episodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_decisions: Option<u64>,
    /// States visited: ARMAC's actors (decisions, chance nodes, terminals), a sampled solver's
    /// walks, a full-width solver's traversals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_touched: Option<u64>,
    /// ARMAC: the learner's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_steps: Option<u64>,
    /// ARMAC: rows the learner's steps trained on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_learned: Option<u64>,
}

impl Budget {
    /// The budget an ARMAC run's counters record.
    pub fn of_armac(st: &crate::rl::armac::ArmacState, cpu_seconds: f64) -> Budget {
        Budget {
            cpu_seconds: Some(cpu_seconds),
            episodes: Some(st.episodes),
            learning_decisions: Some(st.learning_decisions),
            nodes_touched: Some(st.nodes_touched),
            learning_steps: Some(st.learning_steps),
            rows_learned: Some(st.rows_learned),
        }
    }
}

/// Reads a float that JSON stores as `null` when it was NaN.
fn nan_from_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Entry point of `armac-train`: loads the config (by path or name in `configs/`, or from the
/// run directory when resuming), applies overrides, and runs the algorithm it names.
pub fn train(
    config_name: Option<&str>,
    overrides: &[String],
    opts: &TrainOptions,
) -> Result<RunSummary, RunError> {
    for (flag, v) in [
        ("--max-seconds", opts.max_seconds),
        ("--max-cpu-seconds", opts.max_cpu_seconds),
    ] {
        if let Some(v) = v {
            crate::util::check::seconds(flag, v).map_err(RunError::Usage)?;
        }
    }
    if opts.resume && opts.overwrite {
        return Err(RunError::Usage(
            "--overwrite replaces a run; it cannot be combined with --resume".into(),
        ));
    }
    if opts.resume {
        let dir = opts.out.clone().ok_or_else(|| {
            RunError::Usage("--resume needs the run directory (--resume <dir>)".into())
        })?;
        check_run_dir(&dir)?;
        let lock = RunLock::acquire(&dir, false)?;
        // Everything is read and validated before anything in the directory changes.
        let generation = generation::Generation::open(&dir).map_err(RunError::context(format!(
            "cannot resume {}",
            dir.display()
        )))?;
        if let Some(note) = generation.fallback_note(&dir) {
            eprintln!("{note}");
        }
        let path = generation.dir.join("config.toml");
        let stored = resume::generation_config(&generation)?;
        let (config, _) = config::Config::load(&path.display().to_string(), overrides)?;
        let config = redact_config(config)?;
        validate(&config)?;
        let changed = resume::check_config(&stored, &config)?;
        broker_preflight(&config, &dir, true)?;
        let step = generation.manifest.step;
        if step >= resume::target_step(&config)
            && let Some(mut summary) = summary::finished_at(&dir, step)
        {
            // The directory may have moved since the run ended: name where it is now.
            summary.run_dir = dir.clone();
            if !opts.quiet {
                eprintln!(
                    "{} is already finished ({step} of {step}); nothing to do (raise the budget \
                     with --set to continue it)",
                    dir.display()
                );
            }
            return Ok(summary);
        }
        resume::check_logs(&dir)?;
        let resumed = Resumed {
            generation,
            changed,
        };
        lock.record_pid()?;
        return match Algorithm::of(&config)? {
            Algorithm::Tabular(s) => tabular::run(&config, &s, &dir, opts, Some(&resumed)),
            Algorithm::Sog(s) => sog::run(&config, &s, &dir, opts, Some(&resumed)),
            Algorithm::Armac(s) => armac::run(&config, &s, &dir, opts, Some(&resumed)),
        };
    }
    let name = config_name.ok_or_else(|| RunError::Usage("--config is required".into()))?;
    let (config, path) = config::Config::load(name, overrides)?;
    // A broker password leaves the config before it is validated, printed or saved.
    let config = redact_config(config)?;
    let dir = opts.out.clone().unwrap_or_else(|| default_run_dir(&path));
    // Everything is validated before the run directory is touched.
    validate(&config)?;
    // What a replacement killed with its process left beside the directory.
    for name in replace::sweep_stale_siblings(&dir) {
        if !opts.quiet {
            eprintln!("removed {name}, left by a replacement whose process is gone");
        }
    }
    let existing = replace::classify(&dir);
    match (&existing, opts.overwrite) {
        (replace::Existing::Run, false) => {
            return Err(RunError::RunExists(dir.display().to_string()));
        }
        (replace::Existing::Other(why), false) => {
            return Err(RunError::NotARun {
                dir: dir.display().to_string(),
                why: why.clone(),
            });
        }
        (replace::Existing::Other(why), true) => {
            return Err(RunError::Usage(format!(
                "--overwrite refuses to replace {}: {why}; nothing was changed",
                dir.display()
            )));
        }
        _ => {}
    }
    broker_preflight(&config, &dir, false)?;
    if existing == replace::Existing::Run {
        return replace_run(config, &dir, opts);
    }
    // The outermost directory this run creates: removed again if the run fails before its
    // first checkpoint, so a failed new run leaves nothing behind.
    let created = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .last()
        .map(Path::to_path_buf);
    let lock = RunLock::acquire(&dir, true)?;
    let result = (|| {
        replace::write_marker(&dir)?;
        lock.record_pid()?;
        start(&config, &dir, opts)
    })();
    if result.is_err() {
        if let Some(top) = created
            && !generation::Generation::exists(&dir)
        {
            let _ = std::fs::remove_dir_all(top);
        } else if !generation::Generation::exists(&dir) {
            // An empty directory given as --out: left empty again.
            let _ = std::fs::remove_file(dir.join(replace::MARKER));
        }
    }
    result
}

/// Starts a new run of `config` in `dir`.
fn start(config: &config::Config, dir: &Path, opts: &TrainOptions) -> Result<RunSummary, RunError> {
    match Algorithm::of(config)? {
        Algorithm::Tabular(s) => tabular::run(config, &s, dir, opts, None),
        Algorithm::Sog(s) => sog::run(config, &s, dir, opts, None),
        Algorithm::Armac(s) => armac::run(config, &s, dir, opts, None),
    }
}

/// `--overwrite` of the run in `dir`: the new run is built beside it and takes its place at
/// its first committed checkpoint; until then the old run stays as it is.
fn replace_run(
    mut config: config::Config,
    dir: &Path,
    opts: &TrainOptions,
) -> Result<RunSummary, RunError> {
    // A learner's broker run id defaults to the directory's name: the final one, not the
    // staging directory's.
    if let Some(cluster) = config.cluster.as_mut()
        && cluster.run.is_none()
        && let Some(name) = dir.file_name()
    {
        cluster.run = Some(name.to_string_lossy().into_owned());
    }
    let replacement = replace::Replacement::begin(dir)?;
    let staging = replacement.staging.clone();
    // Held until the replacement is finished (the staging directory's lock moves with it).
    let mut lock = None;
    let result = (|| {
        let held = lock.insert(RunLock::acquire(&staging, false)?);
        replace::write_marker(&staging)?;
        held.record_pid()?;
        start(&config, &staging, opts)
    })();
    let result = replacement.finish(result);
    drop(lock);
    result
}

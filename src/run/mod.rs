//! Runs: configs, run directories, checkpoints, TensorBoard, metrics CSV and progress bars,
//! and the drivers that tie an algorithm to them. The binaries call into this module only.

pub mod armac;
pub mod checkpoint;
pub mod config;
pub mod diagnostics;
pub mod evaluate;
pub mod generation;
pub mod holdem_sog;
pub mod resume;
pub mod sog;
pub mod solvers;
pub mod tabular;
pub mod tensorboard;
pub mod watch;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::write_atomic;

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
    /// if it is missing. Also returns the step of the last row kept.
    pub fn resume(
        path: &Path,
        header: &[&str],
        last_step: u64,
    ) -> std::io::Result<(MetricsCsv, Option<u64>)> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(_) => return Ok((Self::create(path, header)?, None)),
        };
        let mut kept = format!("{}\n", header.join(","));
        let mut last = None;
        for line in text.split_inclusive('\n').skip(1) {
            let Some(row) = line.strip_suffix('\n') else {
                continue; // torn by a stop during the write
            };
            let step = row.split(',').next().and_then(|s| s.parse::<u64>().ok());
            if row.split(',').count() == header.len()
                && let Some(step) = step.filter(|&s| s <= last_step)
            {
                kept.push_str(line);
                last = Some(step);
            }
        }
        if kept != text {
            write_atomic(path, kept.as_bytes())?;
        }
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
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
            budget: seconds.map(Duration::from_secs_f64),
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

/// A process-wide flag set by SIGINT (Ctrl-C), SIGTERM (what schedulers and `docker stop`
/// send) or SIGHUP: long runs poll it and stop at the next safe point, writing a consistent
/// checkpoint. A second signal ends the process at once (exit status 130). The handler is
/// installed on first use.
pub fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    static FLAG: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
        std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = flag.clone();
        // A second handler cannot be installed (e.g. in tests); the flag then stays false.
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, std::sync::atomic::Ordering::SeqCst) {
                eprintln!("second signal: stopping at once");
                std::process::exit(130);
            }
            eprintln!("signal received: stopping at the next safe point (again to stop at once)");
        });
        flag
    })
    .clone()
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

impl From<crate::rl::armac::TrainError> for RunError {
    /// Variant by variant; an error of the run layer carried through the trainer comes out as
    /// it went in.
    fn from(e: crate::rl::armac::TrainError) -> RunError {
        use crate::rl::armac::TrainError;
        match e {
            TrainError::Game(e) => RunError::Game(e),
            TrainError::Tree(e) => RunError::Tree(e),
            TrainError::Io { what, path, source } => RunError::Io { what, path, source },
            TrainError::Usage(s) => RunError::Usage(s),
            TrainError::Failed { context, source } => RunError::Failed { context, source },
            TrainError::Driver(e) => match e.downcast::<RunError>() {
                Ok(e) => *e,
                Err(source) => RunError::Failed {
                    context: "the run".into(),
                    source,
                },
            },
        }
    }
}

impl From<RunError> for crate::rl::armac::TrainError {
    fn from(e: RunError) -> crate::rl::armac::TrainError {
        crate::rl::armac::TrainError::Driver(Box::new(e))
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
    /// Replace whatever a non-empty `out` holds (a new run only).
    pub overwrite: bool,
}

/// The name of the lock file inside a run directory.
pub const LOCK_FILE: &str = "run.lock";

/// An exclusive advisory lock on a run directory, held for the life of a run: a second
/// process that tries to run in (or resume, or overwrite) the same directory gets
/// [`RunError::RunLocked`] naming the holder's pid. Released when dropped or when the
/// process dies.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Creates `dir` if needed and locks it.
    pub fn acquire(dir: &Path) -> Result<RunLock, RunError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| RunError::Io {
                what,
                path: dir.display().to_string(),
                source,
            }
        };
        std::fs::create_dir_all(dir).map_err(io("run directory"))?;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io("lock file"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok())
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default();
                return Err(RunError::RunLocked {
                    dir: dir.display().to_string(),
                    holder,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io("lock file")(e)),
        }
        file.set_len(0).map_err(io("lock file"))?;
        writeln!(file, "{}", std::process::id()).map_err(io("lock file"))?;
        Ok(RunLock { _file: file })
    }
}

/// Whether `dir` holds anything but (possibly) its lock file.
fn has_contents(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .is_ok_and(|mut it| it.any(|e| e.is_ok_and(|e| e.file_name() != LOCK_FILE)))
}

/// Removes everything in `dir` except its lock file.
fn clear_run_dir(dir: &Path) -> Result<(), RunError> {
    let io = |source| RunError::Io {
        what: "run directory (--overwrite)".into(),
        path: dir.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_name() == LOCK_FILE {
            continue;
        }
        let p = entry.path();
        if entry.file_type().map_err(io)?.is_dir() {
            std::fs::remove_dir_all(&p).map_err(io)?;
        } else {
            std::fs::remove_file(&p).map_err(io)?;
        }
    }
    Ok(())
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
}

/// Reads a float that JSON stores as `null` when it was NaN.
fn nan_from_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Validates the algorithm section of `config` (exactly one of `[solver]`, `[armac]`, `[sog]`).
pub fn validate(config: &config::Config) -> Result<(), RunError> {
    match (
        config.solver.is_some(),
        config.armac.is_some(),
        config.sog.is_some(),
    ) {
        (true, false, false) => config.tabular().map(drop).map_err(Into::into),
        (false, true, false) => config.armac().map(drop).map_err(Into::into),
        (false, false, true) => {
            let s = config.sog()?;
            // Games search refuses are refused before the run directory is touched.
            let game = crate::games::load_game(&config.game)?;
            if game.short_name() == "universal_poker" {
                return holdem_sog::check_settings(&s);
            }
            if s.max_nodes.is_some() {
                return Err(config::ConfigError::Value {
                    key: "sog.search.max_nodes".into(),
                    reason: "applies to Hold'em (universal_poker) searches only".into(),
                }
                .into());
            }
            crate::search::check_supported(game.as_ref())
                .map_err(RunError::context("the game of a Student of Games run"))
        }
        (false, false, false) => Err(RunError::Usage(
            "the config has no algorithm section (expected [solver], [armac] or [sog])".into(),
        )),
        _ => Err(RunError::Usage(
            "the config has more than one of [solver], [armac], [sog]; keep one algorithm section"
                .into(),
        )),
    }
}

/// Entry point of `armac-train`: loads the config (by path or name in `configs/`, or from the
/// run directory when resuming), applies overrides, and runs the algorithm it names.
/// Checks `cluster.broker` and moves a password out of it into this process's memory, so
/// that the config saved in the run directory, in checkpoints and on the broker holds none.
/// Configs without `[cluster]` are returned unchanged.
fn redact_config(mut config: config::Config) -> Result<config::Config, RunError> {
    if let Some(c) = config.cluster.as_mut() {
        c.broker = crate::cluster::redact_broker(&c.broker)?;
    }
    Ok(config)
}

/// A learner with a broker (`cluster.role = "learner"`) checks it before the run directory
/// is created or changed: an unreachable broker, a wrong password or a taken run id leave the
/// directory untouched.
fn broker_preflight(config: &config::Config, dir: &Path, resumed: bool) -> Result<(), RunError> {
    if config.armac.is_none() || config.cluster.is_none() {
        return Ok(());
    }
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(ls) =
        crate::cluster::LearnerSettings::of(config.cluster.as_ref(), &config.armac()?, &dir_name)?
    {
        crate::cluster::redis::preflight(&ls, resumed)
            .map_err(RunError::context("connecting the learner to its broker"))?;
    }
    Ok(())
}

pub fn train(
    config_name: Option<&str>,
    overrides: &[String],
    opts: &TrainOptions,
) -> Result<RunSummary, RunError> {
    if opts.resume && opts.overwrite {
        return Err(RunError::Usage(
            "--overwrite replaces a run; it cannot be combined with --resume".into(),
        ));
    }
    if opts.resume {
        let dir = opts.out.clone().ok_or_else(|| {
            RunError::Usage("--resume needs the run directory (--resume <dir>)".into())
        })?;
        if !dir.join("config.toml").is_file() {
            return Err(RunError::Usage(format!(
                "{} has no config.toml: not a run directory",
                dir.display()
            )));
        }
        let _lock = RunLock::acquire(&dir)?;
        // Everything is read and validated before anything in the directory changes.
        let generation = generation::Generation::open(&dir).map_err(RunError::context(format!(
            "cannot resume {}",
            dir.display()
        )))?;
        let path = generation.dir.join("config.toml");
        let stored = resume::generation_config(&generation)?;
        let (config, _) = config::Config::load(&path.display().to_string(), overrides)?;
        let config = redact_config(config)?;
        validate(&config)?;
        let changed = resume::check_config(&stored, &config)?;
        broker_preflight(&config, &dir, true)?;
        let step = generation.manifest.step;
        if step >= resume::target_step(&config)
            && let Some(summary) = std::fs::read(dir.join("summary.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<RunSummary>(&b).ok())
                .filter(|s| s.iterations == step)
        {
            if !opts.quiet {
                eprintln!(
                    "{} is already finished ({step} of {step}); nothing to do (raise the budget \
                     with --set to continue it)",
                    dir.display()
                );
            }
            return Ok(summary);
        }
        let resumed = Resumed {
            generation,
            changed,
        };
        return if config.solver.is_some() {
            tabular::run(&config, &config.tabular()?, &dir, opts, Some(&resumed))
        } else if config.sog.is_some() {
            sog::run(&config, &config.sog()?, &dir, opts, Some(&resumed))
        } else {
            armac::run(&config, &config.armac()?, &dir, opts, Some(&resumed))
        };
    }
    let name = config_name.ok_or_else(|| RunError::Usage("--config is required".into()))?;
    let (config, path) = config::Config::load(name, overrides)?;
    // A broker password leaves the config before it is validated, printed or saved.
    let config = redact_config(config)?;
    let dir = opts.out.clone().unwrap_or_else(|| default_run_dir(&path));
    // Everything is validated before the run directory is touched.
    validate(&config)?;
    if has_contents(&dir) && !opts.overwrite {
        return Err(RunError::RunExists(dir.display().to_string()));
    }
    broker_preflight(&config, &dir, false)?;
    let _lock = RunLock::acquire(&dir)?;
    if opts.overwrite {
        clear_run_dir(&dir)?;
    }
    if config.solver.is_some() {
        tabular::run(&config, &config.tabular()?, &dir, opts, None)
    } else if config.sog.is_some() {
        sog::run(&config, &config.sog()?, &dir, opts, None)
    } else {
        armac::run(&config, &config.armac()?, &dir, opts, None)
    }
}

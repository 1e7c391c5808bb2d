//! Checks of a run before its directory is touched: [`validate`] (the algorithm section, the
//! game, the devices and a memory estimate against this machine's available memory), the
//! broker password's removal from the config ([`redact_config`]) and a learner's broker
//! check ([`broker_preflight`]).

use std::path::Path;

use crate::run::{RunError, config, sog};

/// Validates `config` before anything is written: the algorithm section (exactly one of
/// `[solver]`, `[armac]`, `[sog]`) with every size bound, the game string (the game is loaded),
/// the compute devices (compiled in, driver present) and the keys that apply to one run kind
/// only (`[cluster]`, `--broker`: ARMAC runs).
pub fn validate(config: &config::Config) -> Result<(), RunError> {
    validate_section(config)?;
    let game = crate::games::load_game(&config.game).map_err(RunError::context(format!(
        "the config's game `{}`",
        config.game
    )))?;
    if config.cluster.is_some() && config.armac.is_none() {
        return Err(config::ConfigError::Value {
            key: "cluster".into(),
            reason: "applies to ARMAC runs only (drop the [cluster] section or --broker/--role)"
                .into(),
        }
        .into());
    }
    let device = |key: &str, name: &str| {
        crate::nn::select_device(name)
            .map(drop)
            .map_err(RunError::context(key.to_string()))
    };
    if config.armac.is_some() {
        device("armac.device", config.armac()?.device.as_str())?;
    }
    if config.sog.is_some() {
        let s = config.sog()?;
        device("sog.device", &s.device)?;
        if s.search_engine == "tensor" {
            device("sog.search.device", &s.search_device)?;
        }
    }
    fits_in_memory(&memory_terms(config, &game)?)
}

/// The memory estimate of the run `config` describes on `game`, by term (see
/// [`memory_estimate`]).
fn memory_terms(
    config: &config::Config,
    game: &crate::game::GameRef,
) -> Result<Vec<MemoryTerm>, RunError> {
    let mut terms = vec![MemoryTerm {
        key: "game",
        what: "the program itself (code, allocator, thread stacks)".into(),
        bytes: PROGRAM_BYTES,
    }];
    match Algorithm::of(config)? {
        Algorithm::Tabular(s) => terms.extend(tabular_terms(game.as_ref(), &s.choice)?),
        Algorithm::Armac(_) => {
            let a = config.armac()?;
            terms.extend(armac_memory_terms(&a, game));
        }
        Algorithm::Sog(s) => terms.push(network_term("sog.net.hidden", s.hidden, s.layers)),
    }
    Ok(terms)
}

/// What [`validate`] compares with the memory available: the estimated peak bytes of the run
/// `config` describes (validated first, as [`validate`] does), and the largest part of it,
/// described.
pub fn memory_estimate(config: &config::Config) -> Result<(u64, String), RunError> {
    validate_section(config)?;
    let game = crate::games::load_game(&config.game).map_err(RunError::context(format!(
        "the config's game `{}`",
        config.game
    )))?;
    let terms = memory_terms(config, &game)?;
    let total: u128 = terms.iter().map(|t| t.bytes).sum();
    let largest = terms
        .iter()
        .max_by_key(|t| t.bytes)
        .expect("the program's term is always there");
    Ok((
        u64::try_from(total).unwrap_or(u64::MAX),
        format!("{} ({} MiB)", largest.what, largest.bytes >> 20),
    ))
}

/// The resident memory of the program before any run state: its code, the allocator's arenas
/// and the threads' stacks.
const PROGRAM_BYTES: u128 = 16 << 20;

/// Bytes of memory this process can still take, if known: the smallest of the machine's
/// `MemAvailable` (`/proc/meminfo`), what the cgroup's `memory.max` leaves above its
/// `memory.current`, and what `RLIMIT_AS` leaves above the process's address space.
pub fn available_memory_bytes() -> Option<u64> {
    [
        meminfo_available(),
        cgroup_available(),
        rlimit_as_available(),
    ]
    .into_iter()
    .flatten()
    .min()
}

/// The number (in KiB, as bytes) after `key` in a `/proc` status-style file.
fn proc_kib(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn meminfo_available() -> Option<u64> {
    proc_kib("/proc/meminfo", "MemAvailable:")
}

/// cgroup v2: `memory.max` less `memory.current` of this process's cgroup (`max`: none).
fn cgroup_available() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_available_in(&membership, Path::new("/sys/fs/cgroup"))
}

/// What the cgroup v2 named by `membership` (a `/proc/PID/cgroup` text; its `0::PATH` line)
/// leaves under `root`: its `memory.max` less its `memory.current`; None without a v2 line,
/// without a limit (`max`) or when the files cannot be read.
fn cgroup_available_in(membership: &str, root: &Path) -> Option<u64> {
    let rel = membership.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = root.join(rel.trim_start_matches('/'));
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let max = read("memory.max")?;
    Some(max.saturating_sub(read("memory.current").unwrap_or(0)))
}

/// `RLIMIT_AS` less the address space the process already has (`VmSize`).
fn rlimit_as_available() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit; RLIMIT_AS is a constant libc defines.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let used = proc_kib("/proc/self/status", "VmSize:").unwrap_or(0);
    Some(lim.rlim_cur.saturating_sub(used))
}

/// Bytes per history of the game that a compiled tree and a tabular solver's tables take: the
/// public tree with its infosets for the full-width CFR family (peak resident memory above
/// the program's measured 35 to 70 bytes a history on Leduc with 13 ranks, the tiny Hold'em
/// and Liar's Dice), and with a history tree beside it for the sampling solvers (MCCFR, POS,
/// stochastic FTRL/OMD) and the batched ones (265 to 295 bytes a history on Liar's Dice).
/// `tests/estimate.rs` checks the estimate against measured peaks.
const TREE_BYTES_PER_HISTORY: u128 = 72;
const HISTORY_TREE_BYTES_PER_HISTORY: u128 = 320;
/// `batched-pos` before its instances: the history tree, the tensor tree and the sampler's
/// per-node tables (peaks measured at 750 to 1280 bytes a history with one instance, on
/// Liar's Dice and Leduc with 6 ranks).
const BATCHED_POS_BYTES_PER_HISTORY: u128 = 1000;
/// Each instance of a batched solver (`batch`), in `f32`: its regrets, averages, reaches and
/// values over the tensor tree (measured 8 to 63 bytes a history for `batched-cfr` and 47 to
/// 78 for `batched-pos`, on Leduc with 6 ranks and Liar's Dice; the larger is taken, so the
/// estimate of a large batch on a game with few public nodes is high). Twice that in `f64`.
const BATCHED_INSTANCE_BYTES_PER_HISTORY: u128 = 80;

/// A `[solver]` run's size check, before any tree is built: the game's histories are counted
/// (stopping past the tree's cap, so a game too large costs seconds and no memory) and their
/// estimated bytes compared with the memory available. Errors name the game and the estimate.
pub fn tabular_fits(
    game: &dyn crate::game::Game,
    choice: &crate::run::solvers::SolverChoice,
) -> Result<(), RunError> {
    fits_in_memory(&tabular_terms(game, choice)?)
}

/// The memory terms of a `[solver]` run on `game`: its histories counted (up to the cap)
/// times the bytes each takes in the compiled trees and the solver's tables, and for a
/// batched solver its instances (`solver.batch`).
fn tabular_terms(
    game: &dyn crate::game::Game,
    choice: &crate::run::solvers::SolverChoice,
) -> Result<Vec<MemoryTerm>, RunError> {
    use crate::run::solvers::{BatchedKind, SolverChoice};
    let limit = crate::tree::DEFAULT_MAX_HISTORIES;
    let histories =
        crate::tree::count_histories(game, limit).map_err(|_| config::ConfigError::Value {
            key: "game".into(),
            reason: format!(
                "`{}` has more than {limit} histories, the most a [solver] run compiles (its \
                 tree would take over {} MiB); ARMAC and Student of Games runs sample such a \
                 game instead",
                game.load_string(),
                (limit as u128 * TREE_BYTES_PER_HISTORY) >> 20
            ),
        })?;
    let per = match choice {
        SolverChoice::Cfr(_) => TREE_BYTES_PER_HISTORY,
        SolverChoice::Batched(b) if matches!(b.kind, BatchedKind::Pos(_)) => {
            BATCHED_POS_BYTES_PER_HISTORY
        }
        _ => HISTORY_TREE_BYTES_PER_HISTORY,
    };
    let mut terms = vec![MemoryTerm {
        key: "game",
        what: format!(
            "the tree of `{}` ({histories} histories × {per} bytes)",
            game.load_string()
        ),
        bytes: histories as u128 * per,
    }];
    if let SolverChoice::Batched(b) = choice {
        let width = match b.precision {
            crate::nn::public::Precision::F32 => 1,
            crate::nn::public::Precision::F64 => 2,
        };
        let each = width * BATCHED_INSTANCE_BYTES_PER_HISTORY;
        terms.push(MemoryTerm {
            key: "solver.batch",
            what: format!(
                "{} solver instances ({histories} histories × {each} bytes each)",
                b.batch
            ),
            bytes: b.batch as u128 * histories as u128 * each,
        });
    }
    Ok(terms)
}

/// One term of a run's memory estimate: the key that sets it, what it holds, and its bytes.
struct MemoryTerm {
    key: &'static str,
    what: String,
    bytes: u128,
}

/// A network's training state: each network's f32 weights (about `hidden² × layers × 4`
/// bytes) are held about eight times over (the learner's heads, their gradients, two Adam
/// moments, inference snapshots and target copies), so `hidden² × layers × 32` bytes.
fn network_term(key: &'static str, hidden: usize, layers: usize) -> MemoryTerm {
    MemoryTerm {
        key,
        what: format!("{hidden} units x {layers} layers ({hidden}² × {layers} × 32 bytes)"),
        bytes: (hidden as u128).pow(2) * layers as u128 * 32,
    }
}

/// An ARMAC run's memory estimate: the network, the two reservoirs of decisions (one f32
/// tensor, a mask and a target per row), the replay memory (at most the game's longest episode
/// per trajectory, both seats' tensors per step) and the working set of past networks.
fn armac_memory_terms(
    a: &crate::rl::armac::ArmacSettings,
    game: &crate::game::GameRef,
) -> Vec<MemoryTerm> {
    let info = game.information_state_tensor_size() as u128;
    let actions = game.num_distinct_actions() as u128;
    // A stored decision: its tensor(s), legal mask and target (f32), plus the vectors'
    // headers and the row's bookkeeping.
    let row = |tensors: u128| tensors * info * 4 + actions * 9 + 160;
    let params = crate::rl::armac::net_config(game, a).num_params() as u128;
    let mut terms = vec![MemoryTerm {
        key: "armac.hidden",
        what: format!(
            "the network ({params} parameters of {} units x {} layers, {NETWORK_COPIES} f32 \
             copies)",
            a.hidden, a.layers
        ),
        bytes: params * 4 * NETWORK_COPIES,
    }];
    if a.memory == crate::rl::armac::memory::MemoryKind::Reservoir {
        terms.push(MemoryTerm {
            key: "armac.memory_capacity",
            what: format!("two reservoirs of {} decisions", a.memory_capacity),
            bytes: 2 * a.memory_capacity as u128 * row(1),
        });
    }
    let steps = game.max_game_length().max(1) as u128;
    terms.push(MemoryTerm {
        key: "armac.replay_capacity",
        what: format!(
            "a replay memory of {} trajectories of up to {steps} decisions",
            a.replay_capacity
        ),
        bytes: a.replay_capacity as u128 * steps * row(2),
    });
    // Past networks: the working set holds at most `snapshot_memory_mb`, and at most two
    // copies of each network of the reservoir (at the snapshots' precision).
    let each = params * a.snapshot_precision.bytes_per_weight() as u128;
    let past = (a.reservoir_capacity as u128 * 2 * each).min((a.snapshot_memory_mb as u128) << 20);
    terms.push(MemoryTerm {
        key: "armac.snapshot_memory_mb",
        what: format!(
            "past networks (up to {} MiB, {} networks)",
            a.snapshot_memory_mb, a.reservoir_capacity
        ),
        bytes: past,
    });
    terms
}

/// How many f32 copies of the network an ARMAC run holds besides its past networks: the
/// learner's weights, gradients and two Adam moments, the actors' and the evaluation's
/// inference copies, and the buffers a checkpoint is written through (measured: see
/// `tests/estimate.rs`).
const NETWORK_COPIES: u128 = 10;

/// Refuses a run whose memory estimate (the sum of `terms`) exceeds this machine's available
/// memory, naming the key of the largest term.
fn fits_in_memory(terms: &[MemoryTerm]) -> Result<(), RunError> {
    let total: u128 = terms.iter().map(|t| t.bytes).sum();
    let Some(available) = available_memory_bytes() else {
        return Ok(());
    };
    if total <= available as u128 {
        return Ok(());
    }
    let largest = terms
        .iter()
        .max_by_key(|t| t.bytes)
        .expect("terms are given");
    Err(config::ConfigError::Value {
        key: largest.key.into(),
        reason: format!(
            "the run would need about {} MiB, more than the {} MiB available to it (the least \
             of the machine's available memory, the cgroup's memory.max and RLIMIT_AS); the \
             largest part is {}: about {} MiB",
            total >> 20,
            available >> 20,
            largest.what,
            largest.bytes >> 20
        ),
    }
    .into())
}

/// The algorithm a config runs, validated into its typed settings: exactly one of its
/// `[solver]`, `[armac]` and `[sog]` sections.
pub enum Algorithm {
    Tabular(crate::run::solvers::TabularSettings),
    Armac(crate::rl::armac::ArmacRun),
    Sog(crate::rl::sog::SogSettings),
}

impl Algorithm {
    /// The algorithm of `config`; errors name the section's bad key, a missing section or a
    /// second one.
    pub fn of(config: &config::Config) -> Result<Algorithm, RunError> {
        match (
            config.solver.is_some(),
            config.armac.is_some(),
            config.sog.is_some(),
        ) {
            (true, false, false) => Ok(Algorithm::Tabular(config.tabular()?)),
            (false, true, false) => Ok(Algorithm::Armac(config.armac()?)),
            (false, false, true) => Ok(Algorithm::Sog(config.sog()?)),
            (false, false, false) => Err(RunError::Usage(
                "the config has no algorithm section (expected [solver], [armac] or [sog])".into(),
            )),
            _ => Err(RunError::Usage(
                "the config has more than one of [solver], [armac], [sog]; keep one algorithm \
                 section"
                    .into(),
            )),
        }
    }
}

/// The algorithm section of [`validate`].
fn validate_section(config: &config::Config) -> Result<(), RunError> {
    match Algorithm::of(config)? {
        Algorithm::Tabular(_) | Algorithm::Armac(_) => Ok(()),
        Algorithm::Sog(s) => {
            // Games search refuses are refused before the run directory is touched.
            let game = crate::games::load_game(&config.game)?;
            if game.short_name() == "universal_poker" {
                return sog::holdem::check_settings(&s);
            }
            for (key, set) in [
                ("sog.search.max_nodes", s.max_nodes.is_some()),
                ("sog.search.runout_boards", s.runout_boards.is_some()),
            ] {
                if set {
                    return Err(config::ConfigError::Value {
                        key: key.into(),
                        reason: "applies to Hold'em (universal_poker) searches only".into(),
                    }
                    .into());
                }
            }
            crate::search::check_supported(game.as_ref())
                .map_err(RunError::context("the game of a Student of Games run"))
        }
    }
}

/// Checks `cluster.broker` and moves a password out of it into this process's memory, so
/// that the config saved in the run directory, in checkpoints and on the broker holds none.
/// Configs without `[cluster]` are returned unchanged.
pub(super) fn redact_config(mut config: config::Config) -> Result<config::Config, RunError> {
    if let Some(c) = config.cluster.as_mut() {
        c.broker = crate::cluster::redact_broker(&c.broker)?;
    }
    Ok(config)
}

/// A learner with a broker (`cluster.role = "learner"`) checks it before the run directory
/// is created or changed: an unreachable broker, a wrong password or a taken run id leave the
/// directory untouched.
pub(super) fn broker_preflight(
    config: &config::Config,
    dir: &Path,
    resumed: bool,
) -> Result<(), RunError> {
    if config.armac.is_none() || config.cluster.is_none() {
        return Ok(());
    }
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(ls) = crate::cluster::LearnerSettings::of(
        config.cluster.as_ref(),
        &config.armac()?.settings,
        &dir_name,
    )? {
        crate::cluster::redis::preflight(&ls, resumed)
            .map_err(RunError::context("connecting the learner to its broker"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cgroup_available_in;

    /// A cgroup v2 limit is read from the process's own group: `memory.max` less
    /// `memory.current`; no limit (`max`), no v2 line or no files leave it unknown.
    #[test]
    fn the_cgroup_limit_is_what_its_group_leaves() {
        let root = std::env::temp_dir().join(format!("armac-cgroup-{}", std::process::id()));
        let group = root.join("user.slice/run-1.scope");
        std::fs::create_dir_all(&group).unwrap();
        let membership = "0::/user.slice/run-1.scope\n";
        std::fs::write(group.join("memory.max"), "4294967296\n").unwrap();
        std::fs::write(group.join("memory.current"), "1073741824\n").unwrap();
        assert_eq!(cgroup_available_in(membership, &root), Some(3 << 30));
        // Over its limit (the kernel lets `current` pass `max` briefly): nothing left.
        std::fs::write(group.join("memory.current"), "5000000000\n").unwrap();
        assert_eq!(cgroup_available_in(membership, &root), Some(0));
        std::fs::write(group.join("memory.max"), "max\n").unwrap();
        assert_eq!(cgroup_available_in(membership, &root), None);
        // cgroup v1 only (no `0::` line), or a group without the memory controller.
        assert_eq!(cgroup_available_in("4:memory:/x\n", &root), None);
        assert_eq!(cgroup_available_in("0::/elsewhere\n", &root), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}

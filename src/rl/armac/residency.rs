//! Reservoir residency: which past networks a run keeps on disk (every past epoch in the
//! reservoir) and which in memory (the working set), their files under `reservoir/`, and
//! the networks the actors play each past epoch with.

use super::exact::{ExactAdvantages, TabularW};
use super::state::{ArmacState, Nets, Sums};
use crate::nn::armac::{ArmacNetConfig, ArmacPolicyNet, SnapshotPrecision};
use crate::rl::armac::actor::PastEpoch;
use crate::rl::error::{TrainError, io_err};
use crate::util::FileSum;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The networks of past epochs `epochs` (`θ^j`, their policies, and `θ^{j+1}`, their critics),
/// the latest `θ^latest` and the one before it.
pub fn snapshot_ids(
    epochs: &[u64],
    latest: u64,
    keep_previous: bool,
) -> std::collections::BTreeSet<u64> {
    let mut ids: std::collections::BTreeSet<u64> =
        epochs.iter().flat_map(|&j| [j, j + 1]).collect();
    ids.insert(latest);
    // The previous epoch `latest − 1` (its policy; its critic is `latest`), which
    // `past_draw = "latest"` plays whether or not the reservoir keeps it.
    if keep_previous && let Some(prev) = latest.checked_sub(1) {
        ids.insert(prev);
    }
    ids
}

/// Snapshot ids the run needs on disk: those of every past epoch in the reservoir.
pub fn needed_snapshots(st: &ArmacState) -> std::collections::BTreeSet<u64> {
    snapshot_ids(st.reservoir.items(), st.epoch, st.keep_previous)
}

/// Snapshot ids held in memory: those of the working set's past epochs.
pub fn resident_snapshots(st: &ArmacState) -> std::collections::BTreeSet<u64> {
    snapshot_ids(st.working_set.epochs(), st.epoch, st.keep_previous)
}

/// How many past epochs fit `budget_mb` of memory when each needs two networks of
/// `net_bytes` (its policy and its critic; neighbouring epochs share one).
pub fn working_set_capacity(budget_mb: usize, net_bytes: usize) -> usize {
    ((budget_mb as f64 * 1048576.0) / (2.0 * net_bytes.max(1) as f64))
        .floor()
        .max(1.0) as usize
}

/// Statistics of one update of the networks held in memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResidentStats {
    /// Networks the working set needed that were already in memory.
    pub hits: usize,
    /// Networks read from disk.
    pub loads: usize,
    /// Seconds spent reading and decoding them.
    pub load_seconds: f64,
}

/// Brings `nets` to exactly the networks [`resident_snapshots`] names: drops the others and
/// reads the missing ones from the reservoir directory, each checked against its recorded sum
/// (`sums`) before it is decoded.
pub fn load_resident(
    dir: &Path,
    st: &ArmacState,
    net_cfg: &ArmacNetConfig,
    nets: &mut Nets,
    sums: &Sums,
) -> Result<ResidentStats, TrainError> {
    let want = resident_snapshots(st);
    nets.retain(|id, _| want.contains(id));
    let t0 = Instant::now();
    let mut stats = ResidentStats::default();
    for &id in &want {
        if nets.contains_key(&id) {
            stats.hits += 1;
            continue;
        }
        let path = reservoir_path(dir, id);
        let bytes = std::fs::read(&path).map_err(io_err("network snapshot", &path))?;
        if let Some(sum) = sums.get(&id)
            && FileSum::of(&bytes) != *sum
        {
            return Err(TrainError::Usage(format!(
                "network snapshot {} does not match the sum recorded when it was written \
                 (modified or truncated)",
                path.display()
            )));
        }
        let net = ArmacPolicyNet::load_bytes(net_cfg.clone(), &path, bytes)
            .map_err(TrainError::context("reading a past network"))?;
        nets.insert(id, Arc::new(net));
        stats.loads += 1;
    }
    stats.load_seconds = t0.elapsed().as_secs_f64();
    Ok(stats)
}

pub(crate) fn past_epochs(
    st: &ArmacState,
    nets: &Nets,
    exact_adv: Option<&ExactAdvantages>,
    tabular: Option<&TabularW>,
) -> Vec<PastEpoch> {
    st.working_set
        .epochs()
        .iter()
        .map(|&j| PastEpoch {
            policy: nets[&j].clone(),
            critic: nets[&(j + 1)].clone(),
            exact: exact_adv.map(|e| e.values[&j].clone()),
            table: tabular.and_then(|t| t.table(j)),
        })
        .collect()
}

/// The previous epoch `t − 1` as the actors replay it (`None` in epoch 0).
pub(crate) fn previous_epoch(
    st: &ArmacState,
    nets: &Nets,
    exact_adv: Option<&ExactAdvantages>,
    tabular: Option<&TabularW>,
) -> Option<PastEpoch> {
    let j = st.epoch.checked_sub(1).filter(|_| st.keep_previous)?;
    Some(PastEpoch {
        policy: nets[&j].clone(),
        critic: nets[&st.epoch].clone(),
        exact: exact_adv.map(|e| e.values[&j].clone()),
        table: tabular.and_then(|t| t.table(j)),
    })
}

pub fn reservoir_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(reservoir_rel(id))
}

/// The path of a reservoir network file, relative to the run directory. Files are immutable
/// once written: the run writes `θ^{t+1}` once, at the end of epoch `t`.
pub fn reservoir_rel(id: u64) -> String {
    format!("reservoir/net_{id:06}.bpk")
}

/// Saves network `id` into the reservoir directory in `precision` and returns its sum.
pub fn save_net(
    dir: &Path,
    id: u64,
    net: &ArmacPolicyNet,
    precision: SnapshotPrecision,
) -> Result<FileSum, TrainError> {
    let path = reservoir_path(dir, id);
    net.save_file_as(&path, precision)
        .map_err(TrainError::context("saving a network snapshot"))?;
    let bytes = std::fs::read(&path).map_err(io_err("network snapshot", &path))?;
    Ok(FileSum::of(&bytes))
}

/// Bytes one network takes in memory (f32 weights, whatever the file precision).
pub fn network_bytes(net_cfg: &ArmacNetConfig) -> Result<usize, TrainError> {
    Ok(4 * ArmacPolicyNet::init(net_cfg.clone(), 0)
        .map_err(TrainError::context("sizing the network"))?
        .num_weights())
}

/// Deletes the reservoir network files whose ids are not in `keep` (no kept generation and
/// no part of the running state references them), and the temporary files of network writes
/// that a killed process left behind (the run holds the directory's lock and writes nothing
/// meanwhile).
pub fn collect_reservoir(dir: &Path, keep: &std::collections::BTreeSet<u64>) {
    crate::util::remove_temporaries(&dir.join("reservoir"));
    for e in std::fs::read_dir(dir.join("reservoir"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name();
        let id = name.to_str().and_then(|n| {
            n.strip_prefix("net_")?
                .strip_suffix(".bpk")?
                .parse::<u64>()
                .ok()
        });
        if id.is_some_and(|id| !keep.contains(&id)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

//! The Redis transport: a learner (`armac-train --role learner`) and any number of
//! `armac-actor` processes share one Redis server.
//!
//! # Keys (all under `armac:<run>:`)
//! | key | what |
//! |---|---|
//! | `config` | the run's resolved config (TOML, password-free), written by the learner |
//! | `epoch` | the current [`Published`] epoch: snapshot ids → network keys, `done` at the end |
//! | `quota:<t>` | episodes actors may still start in epoch `t` (`DECRBY` per group) |
//! | `net:<fnv1a>-<len>` | a network file (`.bpk` bytes), content-addressed: actors check the FNV-1a sum and length of the bytes against the key before decoding |
//! | `stream` | trajectories and candidate returns (`XADD`, fields `a` = actor name, `u` = `<token>:<seq>`, then the message); consumer group `learner` |
//!
//! # Nothing lost, nothing twice
//! The learner reads the stream through the consumer group `learner` (one consumer, in id
//! order), so at any time the entries it has processed are exactly those up to the last id it
//! handed to the training loop (the *cursor*). Every checkpoint records the cursor; only after
//! the checkpoint is committed does the learner `XACK` (and `XDEL`) the entries up to it. A
//! learner that dies loses nothing: on `--resume` it reads its pending entries again
//! (`XREADGROUP … 0`), acknowledges those up to the checkpoint's cursor (already in its replay
//! and reservoir memories) and processes the rest again. Actors that die lose at most the
//! group they were playing (never sent); a re-started actor just plays on.
//!
//! # A broker restart
//! Every command goes through a [`Broker`], which reconnects after a dropped connection for up
//! to `cluster.reconnect_secs`. With `appendonly yes` and `appendfsync always` Redis writes and
//! fsyncs each command before it replies, so whatever a process saw acknowledged survives the
//! restart, consumer-group state (pending entries, last delivered id) included. What a process
//! did not see acknowledged may or may not have happened: the learner re-reads its pending
//! entries after a reconnection, and drops an entry whose `u` it has already read (an actor's
//! retried `XADD` pipeline writes the entries that got in the first time again).
//!
//! # Back-pressure
//! Actors wait while the stream holds more than `cluster.stream_cap` entries; entries are only
//! deleted once acknowledged, and the learner checkpoints early when half the cap is read but
//! unacknowledged, so the stream drains.

use super::{ClusterError, EpochPlan, LearnerSettings};
use crate::util::FileSum;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod actor;
mod broker;
mod learner;
mod wire;

pub use actor::{ActorConfig, ActorOptions, ActorReport, ConfigReader, RemoteActor, run_actors};
pub use broker::{Broker, connect};
pub use learner::RedisLearner;
pub use wire::range_entries;

use broker::redis_err;

/// The consumer group (and its only consumer) of the learner.
pub(super) const GROUP: &str = "learner";

/// Environment variable naming a directory where each process appends the stream ids it
/// sends (`armac-actor`) or processes (the learner): the tests count trajectories by id.
pub const AUDIT_ENV: &str = "ARMAC_BROKER_AUDIT";

/// The key names of one run.
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    pub fn new(run: &str) -> Keys {
        Keys {
            prefix: format!("armac:{run}:"),
        }
    }
    pub fn config(&self) -> String {
        format!("{}config", self.prefix)
    }
    pub fn epoch(&self) -> String {
        format!("{}epoch", self.prefix)
    }
    pub fn quota(&self, epoch: u64) -> String {
        format!("{}quota:{epoch}", self.prefix)
    }
    pub fn net(&self, content: &str) -> String {
        format!("{}net:{content}", self.prefix)
    }
    pub fn stream(&self) -> String {
        format!("{}stream", self.prefix)
    }
}

/// The epoch as published on the broker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Published {
    pub plan: EpochPlan,
    /// Snapshot id → content id (`<fnv1a>-<len>`) of its network file.
    pub nets: HashMap<u64, String>,
    /// The run is over: actors exit.
    pub done: bool,
}

pub(super) fn content_id(sum: &FileSum) -> String {
    format!("{}-{}", sum.fnv1a, sum.len)
}

/// Checks, before a learner touches its run directory, that its broker answers and (for a
/// fresh run, `resumed = false`) that the run id is free, so that a learner which cannot start
/// leaves the directory as it was.
pub fn preflight(ls: &LearnerSettings, resumed: bool) -> Result<(), ClusterError> {
    let mut con = connect(&ls.broker)?;
    if resumed {
        return Ok(());
    }
    let keys = Keys::new(&ls.run);
    let exists: i64 = ::redis::cmd("EXISTS")
        .arg(keys.config())
        .query(&mut con)
        .map_err(redis_err(&ls.broker, "EXISTS config"))?;
    if exists != 0 {
        return Err(ClusterError::Usage(format!(
            "broker {}: run id `{}` already exists (key {}); choose another cluster.run, or \
             --resume the run that owns it",
            ls.broker,
            ls.run,
            keys.config()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! How ARMAC's actors and learner talk: a [`LearnerLink`] on the learner's side, an
//! [`ActorLink`] on each actor's, with two implementations.
//!
//! * **In-process** ([`LocalLearner`], [`LocalActor`]): actor threads of the `armac-train`
//!   process, a bounded crossbeam channel for their messages, the epoch's networks behind an
//!   `RwLock` and an atomic episode quota. This is the embedded default: a config without a
//!   `[cluster]` section (or with `role = "embedded"`) runs exactly as before.
//! * **Redis** ([`redis`]): `cluster.role = "learner"` (`armac-train --role learner`) starts no
//!   actor threads; the learner publishes every epoch's networks to a Redis broker and reads
//!   trajectories from a Redis stream, filled by `armac-actor` processes on any machine.
//!
//! The actor loop ([`actor_loop`]) is the same for both: ask the link for the next group's
//! networks (or to wait, or to stop), play the group with [`play_group`], hand the messages to
//! the link.

pub mod redis;

use crate::game::GameRef;
use crate::rl::actor::{ActorMsg, ActorSettings, Snapshots, play_group};
use crate::rl::candidates::Candidate;
use crate::run::RunError;
use crate::run::config::ConfigError;
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// `[cluster]`: where the actors are.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// The broker, `redis://[user[:password]@]host[:port][/db]`. A password in the URL is taken
    /// out when the config is loaded (it is never saved or logged); `ARMAC_REDIS_PASSWORD`
    /// supplies one otherwise.
    pub broker: String,
    /// `embedded` (actor threads in this process; the broker is not used) or `learner`.
    #[serde(default)]
    pub role: Role,
    /// The run's id on the broker (its keys are `armac:<run>:*`); default: the run
    /// directory's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Most entries the trajectory stream may hold: actors wait while it is longer (nothing is
    /// dropped), and the learner checkpoints early once half of it is read but not yet
    /// acknowledged. At least 4 × `armac.episodes_per_epoch`.
    #[serde(default = "default_stream_cap")]
    pub stream_cap: usize,
    /// How long the learner and its actors keep reconnecting to a broker that went away
    /// (restarted, network cut) before they stop with an error naming it, in seconds; 0:
    /// stop at the first lost connection. Actors take the learner's value unless
    /// `armac-actor --reconnect-secs` says otherwise.
    #[serde(default = "default_reconnect_secs")]
    pub reconnect_secs: u64,
}

fn default_stream_cap() -> usize {
    65536
}

/// Default of `cluster.reconnect_secs`.
pub const DEFAULT_RECONNECT_SECS: u64 = 60;

fn default_reconnect_secs() -> u64 {
    DEFAULT_RECONNECT_SECS
}

/// What an `armac-train` process does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Learner and actor threads in one process (the default).
    #[default]
    Embedded,
    /// Learner only: actors are `armac-actor` processes connected through the broker.
    Learner,
}

/// Errors of the broker transport.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A Redis command failed; `broker` is the URL without its password.
    #[error("broker {broker}: {what}")]
    Redis {
        broker: String,
        what: String,
        #[source]
        source: ::redis::RedisError,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Usage(String),
}

/// The password given in the broker URL of the config this process loaded (taken out of the
/// config by [`redact_config`] so that it is never saved).
static PASSWORD: Mutex<Option<String>> = Mutex::new(None);

/// The environment variable that supplies the broker password when the URL has none.
pub const PASSWORD_ENV: &str = "ARMAC_REDIS_PASSWORD";

/// For `rediss://` brokers: a PEM file of the certificate authorities to trust instead of the
/// system's roots (a private CA).
pub const CA_CERT_ENV: &str = "ARMAC_REDIS_CA_CERT";

/// For `rediss://` brokers that check clients (`tls-auth-clients yes`): this process's PEM
/// certificate and key files (both or neither).
pub const CLIENT_CERT_ENV: &str = "ARMAC_REDIS_CLIENT_CERT";
/// See [`CLIENT_CERT_ENV`].
pub const CLIENT_KEY_ENV: &str = "ARMAC_REDIS_CLIENT_KEY";

/// The TLS material of a `rediss://` connection named by the environment (see
/// [`CA_CERT_ENV`], [`CLIENT_CERT_ENV`]); errors name the variable and its file.
fn tls_certificates() -> Result<::redis::TlsCertificates, ClusterError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let read = |name: &str, path: String| -> Result<Vec<u8>, ClusterError> {
        let bytes = std::fs::read(&path)
            .map_err(|e| ClusterError::Usage(format!("{name} = `{path}`: cannot read it: {e}")))?;
        if !String::from_utf8_lossy(&bytes).contains("-----BEGIN ") {
            return Err(ClusterError::Usage(format!(
                "{name} = `{path}`: not a PEM file (no -----BEGIN line)"
            )));
        }
        Ok(bytes)
    };
    let root_cert = match var(CA_CERT_ENV) {
        Some(path) => Some(read(CA_CERT_ENV, path)?),
        None => None,
    };
    let client_tls = match (var(CLIENT_CERT_ENV), var(CLIENT_KEY_ENV)) {
        (Some(cert), Some(key)) => Some(::redis::ClientTlsConfig {
            client_cert: read(CLIENT_CERT_ENV, cert)?,
            client_key: read(CLIENT_KEY_ENV, key)?,
        }),
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            return Err(ClusterError::Usage(format!(
                "{CLIENT_CERT_ENV} and {CLIENT_KEY_ENV} go together: set both or neither"
            )));
        }
    };
    Ok(::redis::TlsCertificates {
        client_tls,
        root_cert,
    })
}

/// `url` without the password of its user-info part (`redis://:secret@h:1/0` →
/// `redis://h:1/0`, `redis://me:secret@h` → `redis://me@h`).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let (info, host) = (&authority[..at], &authority[at + 1..]);
    let user = info.split(':').next().unwrap_or("");
    if user.is_empty() {
        format!("{scheme}://{host}{path}")
    } else {
        format!("{scheme}://{user}@{host}{path}")
    }
}

/// Keeps the password of broker URL `url` in this process's memory (for the connections it
/// opens) and returns the URL without it.
pub fn remember_password(url: &str) -> String {
    if let Ok(info) = parse_broker(url)
        && let Some(p) = info.redis_settings().password()
    {
        *PASSWORD.lock().expect("password lock") = Some(p.to_string());
    }
    redact_url(url)
}

/// Checks `cluster.broker` and moves a password out of it into this process's memory, so
/// that the config saved in the run directory, in checkpoints and on the broker holds none.
/// Configs without `[cluster]` are returned unchanged.
pub fn redact_config(
    mut config: crate::run::config::Config,
) -> Result<crate::run::config::Config, ConfigError> {
    if let Some(c) = config.cluster.as_mut() {
        let info = parse_broker(&c.broker)?;
        if let Some(p) = info.redis_settings().password() {
            *PASSWORD.lock().expect("password lock") = Some(p.to_string());
        }
        c.broker = redact_url(&c.broker);
    }
    Ok(config)
}

/// Parses a broker URL; errors name the key `cluster.broker` and never show a password.
fn parse_broker(url: &str) -> Result<::redis::ConnectionInfo, ConfigError> {
    use ::redis::IntoConnectionInfo;
    let bad = |reason: String| ConfigError::Value {
        key: "cluster.broker".into(),
        reason,
    };
    if !url.starts_with("redis://") && !url.starts_with("rediss://") {
        return Err(bad(format!(
            "`{}` is not a redis://host:port/db (or rediss:// for TLS) URL",
            redact_url(url)
        )));
    }
    if url.contains('#') {
        // The redis crate reads `#insecure` as "skip certificate checks"; this build never
        // skips them.
        return Err(bad(format!(
            "`{}`: a URL fragment (`#...`) is not accepted; TLS certificates are always checked \
             (a private CA goes in {CA_CERT_ENV})",
            redact_url(url)
        )));
    }
    url.into_connection_info().map_err(|e| {
        bad(format!(
            "`{}` is not a valid Redis URL: {e}",
            redact_url(url)
        ))
    })
}

/// Settings of the learner role, validated from `config` (`None`: the embedded default).
#[derive(Clone, Debug)]
pub struct LearnerSettings {
    /// Broker URL without password.
    pub broker: String,
    pub run: String,
    pub stream_cap: usize,
    pub reconnect_secs: u64,
}

impl LearnerSettings {
    /// The learner role's settings, or `None` when the actors are threads of this process.
    /// `dir_name` is the default run id.
    pub fn of(
        config: &crate::run::config::Config,
        s: &crate::run::config::ArmacSettings,
        dir_name: &str,
    ) -> Result<Option<LearnerSettings>, ConfigError> {
        let Some(c) = config.cluster.as_ref().filter(|c| c.role == Role::Learner) else {
            return Ok(None);
        };
        parse_broker(&c.broker)?;
        let run = c.run.clone().unwrap_or_else(|| dir_name.to_string());
        if run.is_empty() || run.contains(|ch: char| ch.is_whitespace() || ch == ':') {
            return Err(ConfigError::Value {
                key: "cluster.run".into(),
                reason: format!("`{run}`: a run id has no spaces or colons"),
            });
        }
        if c.stream_cap < 4 * s.episodes_per_epoch.max(1) {
            return Err(ConfigError::Value {
                key: "cluster.stream_cap".into(),
                reason: format!(
                    "{} is below 4 × armac.episodes_per_epoch = {}",
                    c.stream_cap,
                    4 * s.episodes_per_epoch
                ),
            });
        }
        if s.exact_advantages {
            return Err(ConfigError::Value {
                key: "armac.exact_advantages".into(),
                reason: "not available with cluster.role = \"learner\" (remote actors have no \
                         exact values)"
                    .into(),
            });
        }
        if s.tabular_w {
            return Err(ConfigError::Value {
                key: "armac.tabular_w".into(),
                reason: "not available with cluster.role = \"learner\" (remote actors get \
                         networks, not the learner's tables)"
                    .into(),
            });
        }
        Ok(Some(LearnerSettings {
            broker: redact_url(&c.broker),
            run,
            stream_cap: c.stream_cap,
            reconnect_secs: c.reconnect_secs,
        }))
    }
}

/// Opens a client for `url`: the password comes from the URL, else from the config this
/// process loaded, else from `ARMAC_REDIS_PASSWORD`.
pub(crate) fn client(url: &str) -> Result<::redis::Client, ClusterError> {
    let mut info = parse_broker(url)?;
    if info.redis_settings().password().is_none() {
        let pw = PASSWORD
            .lock()
            .expect("password lock")
            .clone()
            .or_else(|| std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()));
        if let Some(pw) = pw {
            let settings = info.redis_settings().clone().set_password(pw);
            info = info.set_redis_settings(settings);
        }
    }
    let opened = if url.starts_with("rediss://") {
        // The redis crate's rustls has no crypto provider of its own: install ring's as the
        // process default (a no-op when one is installed already).
        static PROVIDER: std::sync::Once = std::sync::Once::new();
        PROVIDER.call_once(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        ::redis::Client::build_with_tls(info, tls_certificates()?)
    } else {
        ::redis::Client::open(info)
    };
    opened.map_err(|source| ClusterError::Redis {
        broker: redact_url(url),
        what: "cannot open a client".into(),
        source,
    })
}

/// The networks of one epoch by snapshot id, as [`Snapshots`] arranges them (the learner's
/// view, published to remote actors).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EpochPlan {
    pub epoch: u64,
    /// `θ^t`.
    pub latest: u64,
    /// Past epochs as (policy id, critic id).
    pub past: Vec<(u64, u64)>,
    /// The previous epoch (policy id, critic id), for `past_draw = "latest"`.
    pub previous: Option<(u64, u64)>,
    pub best: Candidate,
}

/// The learner's end of the transport.
pub trait LearnerLink {
    /// The next message, waiting at most `timeout`; `None` when nothing arrived.
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<ActorMsg>, RunError>;
    /// The next message if one is there.
    fn try_recv(&mut self) -> Result<Option<ActorMsg>, RunError>;
    /// Grants `n` more episodes of `epoch` if the actors' quota is used up (evaluation groups
    /// consume quota without producing the epoch's learning episodes).
    fn top_up(&mut self, epoch: u64, n: i64) -> Result<(), RunError>;
    /// Opens epoch `plan.epoch` with a quota of `episodes` (the networks are already in the
    /// in-process snapshots; a broker publishes them).
    fn begin_epoch(&mut self, plan: &EpochPlan, episodes: i64) -> Result<(), RunError>;
    /// The position in the message stream that a checkpoint records (`None` in-process).
    fn cursor(&self) -> Option<String>;
    /// The highest sequence number handed to the training loop per actor-thread token, which
    /// a checkpoint records beside [`LearnerLink::cursor`] so that a resumed learner still
    /// recognises copies of entries it acknowledged before (empty in-process).
    fn seen(&self) -> std::collections::BTreeMap<String, u64> {
        std::collections::BTreeMap::new()
    }
    /// Whether the learner should checkpoint now to acknowledge what it has read.
    fn wants_checkpoint(&self) -> bool;
    /// A checkpoint recording [`LearnerLink::cursor`] is committed: everything read up to it
    /// can be acknowledged.
    fn committed(&mut self) -> Result<(), RunError>;
    /// Tells the actors to stop.
    fn close(&mut self) -> Result<(), RunError>;
    /// Messages sent but not read yet, when the transport can tell.
    fn queue_depth(&mut self) -> Option<u64>;
    /// Acting steps and trajectories handed to the training loop since the last call, per
    /// named remote actor (empty in-process: the actor threads are not told apart).
    fn actor_counts(&mut self) -> Vec<(String, u64, u64)> {
        Vec::new()
    }
}

/// What an actor does next.
pub enum Next {
    /// Play one group with these networks.
    Play(Arc<Snapshots>),
    /// Nothing to do now; ask again after this long.
    Wait(Duration),
    /// The run is over.
    Stop,
}

/// The actor's end of the transport.
pub trait ActorLink {
    /// Takes the quota for a group of `games` episodes and returns the networks to play it
    /// with, or says to wait or stop.
    fn next_group(&mut self, games: usize) -> Result<Next, ClusterError>;
    /// Sends a group's messages in order; `false` when the learner is gone.
    fn send(&mut self, msgs: Vec<ActorMsg>) -> Result<bool, ClusterError>;
}

/// What one actor loop did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActorTotals {
    pub groups: u64,
    pub trajectories: u64,
    pub steps: u64,
}

/// Plays groups for as long as `link` hands out quota, until it says stop or the learner is
/// gone.
pub fn actor_loop(
    link: &mut dyn ActorLink,
    game: &GameRef,
    settings: &ActorSettings,
    rng: &mut SplitMix64,
) -> Result<ActorTotals, ClusterError> {
    let candidates = Candidate::all().to_vec();
    let mut totals = ActorTotals::default();
    loop {
        let snaps = match link.next_group(settings.games_per_group)? {
            Next::Stop => return Ok(totals),
            Next::Wait(d) => {
                std::thread::sleep(d);
                continue;
            }
            Next::Play(s) => s,
        };
        let (trajs, eval) = play_group(game, &snaps, settings, &candidates, rng);
        totals.groups += 1;
        totals.trajectories += trajs.len() as u64;
        totals.steps += trajs.iter().map(|t| t.len() as u64).sum::<u64>();
        let mut msgs: Vec<ActorMsg> = trajs
            .into_iter()
            .map(|t| ActorMsg::Trajectory(Box::new(t)))
            .collect();
        if let Some((candidate, total)) = eval {
            msgs.push(ActorMsg::CandidateReturn {
                epoch: snaps.epoch,
                candidate,
                total,
                count: settings.games_per_group as u64,
            });
        }
        if !link.send(msgs)? {
            return Ok(totals);
        }
    }
}

/// An actor thread's end of the in-process transport.
pub struct LocalActor {
    pub snapshots: Arc<RwLock<Arc<Snapshots>>>,
    pub stop: Arc<AtomicBool>,
    pub quota: Arc<AtomicI64>,
    pub tx: crossbeam::channel::Sender<ActorMsg>,
}

impl ActorLink for LocalActor {
    fn next_group(&mut self, games: usize) -> Result<Next, ClusterError> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(Next::Stop);
        }
        if self.quota.load(Ordering::Relaxed) <= 0 {
            return Ok(Next::Wait(Duration::from_millis(1)));
        }
        self.quota.fetch_sub(games as i64, Ordering::Relaxed);
        Ok(Next::Play(
            self.snapshots.read().expect("snapshot lock").clone(),
        ))
    }

    fn send(&mut self, msgs: Vec<ActorMsg>) -> Result<bool, ClusterError> {
        for m in msgs {
            if self.tx.send(m).is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The learner's end of the in-process transport.
pub struct LocalLearner {
    /// `None` once closed (the actors then see a disconnected channel).
    pub rx: Option<crossbeam::channel::Receiver<ActorMsg>>,
    pub quota: Arc<AtomicI64>,
}

fn actors_gone() -> RunError {
    RunError::Usage("all actor threads stopped (an actor panicked); see the message above".into())
}

impl LearnerLink for LocalLearner {
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<ActorMsg>, RunError> {
        let rx = self.rx.as_ref().ok_or_else(actors_gone)?;
        match rx.recv_timeout(timeout) {
            Ok(m) => Ok(Some(m)),
            Err(crossbeam::channel::RecvTimeoutError::Timeout) => Ok(None),
            Err(crossbeam::channel::RecvTimeoutError::Disconnected) => Err(actors_gone()),
        }
    }

    fn try_recv(&mut self) -> Result<Option<ActorMsg>, RunError> {
        Ok(self.rx.as_ref().and_then(|rx| rx.try_recv().ok()))
    }

    fn top_up(&mut self, _epoch: u64, n: i64) -> Result<(), RunError> {
        if self.quota.load(Ordering::Relaxed) <= 0 {
            self.quota.fetch_add(n, Ordering::Relaxed);
        }
        Ok(())
    }

    fn begin_epoch(&mut self, _plan: &EpochPlan, episodes: i64) -> Result<(), RunError> {
        self.quota.store(episodes, Ordering::Relaxed);
        Ok(())
    }

    fn cursor(&self) -> Option<String> {
        None
    }

    fn wants_checkpoint(&self) -> bool {
        false
    }

    fn committed(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    fn close(&mut self) -> Result<(), RunError> {
        self.rx = None;
        Ok(())
    }

    fn queue_depth(&mut self) -> Option<u64> {
        // Not logged in-process (the channel is short and TensorBoard stays as it was).
        None
    }
}

/// The actor settings of a run's ARMAC settings (`reward_scale` as the learner computes it).
pub fn actor_settings(game: &GameRef, s: &crate::run::config::ArmacSettings) -> ActorSettings {
    ActorSettings {
        games_per_group: s.games_per_group,
        eval_fraction: s.eval_fraction,
        reward_scale: crate::run::armac::reward_scale(game, s),
        past_draw: s.past_draw,
        advantage_target: s.advantage_target,
        behaviour: s.behaviour,
        chance_baseline: s.chance_baseline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_drops_only_the_password() {
        assert_eq!(redact_url("redis://:pw@h:1/0"), "redis://h:1/0");
        assert_eq!(redact_url("redis://me:pw@h:1/0"), "redis://me@h:1/0");
        assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
        assert_eq!(redact_url("redis://me@h"), "redis://me@h");
    }

    #[test]
    fn broker_errors_name_the_key_and_hide_the_password() {
        for url in [
            "http://:pw@h:1",
            "rediss://:pw@h:1/0#insecure",
            "redis://:pw@h:notaport/0",
        ] {
            let e = parse_broker(url).unwrap_err().to_string();
            assert!(e.contains("cluster.broker"), "{e}");
            assert!(!e.contains("pw"), "{e}");
        }
        assert!(parse_broker("redis://127.0.0.1:6379/0").is_ok());
        assert!(parse_broker("rediss://:pw@127.0.0.1:6380/0").is_ok());
    }
}

//! How ARMAC's actors and learner talk: a [`LearnerLink`] on the learner's side, an
//! [`ActorLink`] on each actor's (both defined in [`crate::rl::armac::transport`] and
//! re-exported here), with two implementations.
//!
//! * **In-process** ([`LocalLearner`], [`LocalActor`]): actor threads of the `armac-train`
//!   process, a bounded crossbeam channel for their messages, the epoch's networks behind an
//!   `RwLock` and an atomic episode quota. This is the embedded default: a config without a
//!   `[cluster]` section (or with `role = "embedded"`) runs its actors in-process.
//! * **Redis** ([`redis`]): `cluster.role = "learner"` (`armac-train --role learner`) starts no
//!   actor threads; the learner publishes every epoch's networks to a Redis broker and reads
//!   trajectories from a Redis stream, filled by `armac-actor` processes on any machine.
//!
//! The actor loop ([`actor_loop`]) is the same for both: ask the link for the next group's
//! networks (or to wait, or to stop), play the group with `play_group`, hand the messages to
//! the link.

pub mod redis;

pub use crate::rl::armac::transport::{
    ActorLink, ActorTotals, EpochPlan, LearnerLink, LocalActor, LocalLearner, Next, actor_loop,
    actor_settings,
};

use crate::rl::armac::ArmacSettings;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

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
    /// A config value the cluster cannot use (reads like the config error of that key).
    #[error("config key `{key}`: {reason}")]
    Key { key: String, reason: String },
    /// The run's config, as fetched from the broker, is unusable.
    #[error(transparent)]
    Config(Box<dyn std::error::Error + Send + Sync>),
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

/// Checks broker URL `url` (`cluster.broker`) and moves its password into this process's
/// memory, so that the config saved in the run directory, in checkpoints and on the broker
/// holds none; returns the URL without it.
pub fn redact_broker(url: &str) -> Result<String, ClusterError> {
    let info = parse_broker(url)?;
    if let Some(p) = info.redis_settings().password() {
        *PASSWORD.lock().expect("password lock") = Some(p.to_string());
    }
    Ok(redact_url(url))
}

/// Parses a broker URL; errors name the key `cluster.broker` and never show a password.
fn parse_broker(url: &str) -> Result<::redis::ConnectionInfo, ClusterError> {
    use ::redis::IntoConnectionInfo;
    let bad = |reason: String| ClusterError::Key {
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
    /// The learner role's settings from a config's `[cluster]` section, or `None` when the
    /// actors are threads of this process. `dir_name` is the default run id.
    pub fn of(
        cluster: Option<&ClusterConfig>,
        s: &ArmacSettings,
        dir_name: &str,
    ) -> Result<Option<LearnerSettings>, ClusterError> {
        let Some(c) = cluster.filter(|c| c.role == Role::Learner) else {
            return Ok(None);
        };
        parse_broker(&c.broker)?;
        let run = c.run.clone().unwrap_or_else(|| dir_name.to_string());
        if run.is_empty() || run.contains(|ch: char| ch.is_whitespace() || ch == ':') {
            return Err(ClusterError::Key {
                key: "cluster.run".into(),
                reason: format!("`{run}`: a run id has no spaces or colons"),
            });
        }
        if c.stream_cap < 4 * s.episodes_per_epoch.max(1) {
            return Err(ClusterError::Key {
                key: "cluster.stream_cap".into(),
                reason: format!(
                    "{} is below 4 × armac.episodes_per_epoch = {}",
                    c.stream_cap,
                    4 * s.episodes_per_epoch
                ),
            });
        }
        if s.exact_advantages {
            return Err(ClusterError::Key {
                key: "armac.exact_advantages".into(),
                reason: "not available with cluster.role = \"learner\" (remote actors have no \
                         exact values)"
                    .into(),
            });
        }
        if s.tabular_w {
            return Err(ClusterError::Key {
                key: "armac.tabular_w".into(),
                reason: "not available with cluster.role = \"learner\" (remote actors get \
                         networks, not the learner's tables)"
                    .into(),
            });
        }
        if s.schedule == crate::rl::armac::choices::Schedule::Lockstep {
            return Err(ClusterError::Key {
                key: "armac.schedule".into(),
                reason: "\"lockstep\" is not available with cluster.role = \"learner\" (remote \
                         actors play concurrently; the lock-step schedule plays its groups in \
                         this process)"
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

#[cfg(test)]
mod tests;

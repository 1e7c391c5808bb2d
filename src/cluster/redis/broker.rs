//! Connections to the broker that ride out a restart ([`Broker`]).

use super::super::ClusterError;
use super::super::client;
use super::super::redact_url;
use crate::rl::TrainError;
use ::redis::Connection;
use std::time::Duration;

/// Connects to `url` (at most 5 s), with an error that names the broker (never its password).
pub fn connect(url: &str) -> Result<Connection, ClusterError> {
    let c = client(url)?;
    let broker = redact_url(url);
    // Authentication errors say so (a missing password shows at the first command).
    let failed = |source: ::redis::RedisError, what: &str| {
        let text = source.to_string();
        let lower = text.to_lowercase();
        let what = if url.starts_with("rediss://")
            && (lower.contains("handshake")
                || lower.contains("certificate")
                || lower.contains("tls"))
        {
            format!(
                "TLS handshake failed (the server's certificate must be signed by a CA in the \
                 system roots or in {}; a server that checks clients needs {} and {})",
                crate::cluster::CA_CERT_ENV,
                crate::cluster::CLIENT_CERT_ENV,
                crate::cluster::CLIENT_KEY_ENV
            )
        } else if text.contains("WRONGPASS") || text.contains("NOAUTH") || lower.contains("auth") {
            format!(
                "authentication failed (check the password in the URL or {})",
                crate::cluster::PASSWORD_ENV
            )
        } else {
            what.to_string()
        };
        ClusterError::Redis {
            broker: broker.clone(),
            what,
            source,
        }
    };
    let mut con = c
        .get_connection_with_timeout(Duration::from_secs(5))
        .map_err(|e| failed(e, "cannot connect"))?;
    // Blocking reads wait at most a few hundred milliseconds; a dead server is an error.
    let _ = con.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = con.set_write_timeout(Some(Duration::from_secs(30)));
    ::redis::cmd("PING")
        .query::<String>(&mut con)
        .map_err(|e| failed(e, "PING"))?;
    Ok(con)
}

/// Whether `e` means the broker went away or is starting up (worth reconnecting), not that
/// it refused the command.
pub(super) fn transient(e: &::redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.kind() == ::redis::ErrorKind::Server(::redis::ServerErrorKind::BusyLoading)
}

/// Longest wait between two reconnection attempts.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// A connection to the broker that outlives a broker restart: a command that fails because
/// the connection dropped (or the server is still loading its data) is retried on a fresh
/// connection, with a backoff from 50 ms doubling to 2 s, for at most `give_up`; then the
/// error names the broker and `cluster.reconnect_secs`.
///
/// A retried command may have run before its reply was lost: callers make sure that running
/// one twice is harmless (`SET`, `XACK`, `XDEL` are; the learner drops `XADD` entries sent
/// twice by their `u` field, and re-reads its pending entries after a reconnection).
pub struct Broker {
    /// The URL as given (it may hold a password: never shown).
    pub(super) url: String,
    /// The URL without password.
    pub name: String,
    pub(super) con: Option<Connection>,
    pub(super) give_up: Duration,
    /// Reconnections so far.
    pub reconnects: u64,
}

impl Broker {
    /// Connects once (an unreachable broker or a wrong password fails at once, with an error
    /// naming it); later commands reconnect for up to `give_up`.
    pub fn open(url: &str, give_up: Duration) -> Result<Broker, ClusterError> {
        let con = connect(url)?;
        Ok(Broker {
            url: url.to_string(),
            name: redact_url(url),
            con: Some(con),
            give_up,
            reconnects: 0,
        })
    }

    /// Sets how long commands keep reconnecting before they fail.
    pub fn set_give_up(&mut self, give_up: Duration) {
        self.give_up = give_up;
    }

    /// Runs `f` on the connection, reconnecting as described on [`Broker`].
    pub fn run<T>(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut Connection) -> ::redis::RedisResult<T>,
    ) -> Result<T, ClusterError> {
        let mut outage: Option<std::time::Instant> = None;
        let mut delay = Duration::from_millis(50);
        loop {
            let err = match self.con.as_mut() {
                Some(con) => match f(con) {
                    Ok(v) => {
                        if let Some(t0) = outage {
                            self.reconnects += 1;
                            eprintln!(
                                "broker {}: reconnected after {:.1} s",
                                self.name,
                                t0.elapsed().as_secs_f64()
                            );
                        }
                        return Ok(v);
                    }
                    Err(e) => e,
                },
                None => match client(&self.url).and_then(|c| {
                    c.get_connection_with_timeout(Duration::from_secs(5))
                        .map_err(redis_err(&self.name, "reconnect"))
                }) {
                    Ok(con) => {
                        let _ = con.set_read_timeout(Some(Duration::from_secs(30)));
                        let _ = con.set_write_timeout(Some(Duration::from_secs(30)));
                        self.con = Some(con);
                        continue;
                    }
                    Err(ClusterError::Redis { source, .. }) => source,
                    Err(e) => return Err(e),
                },
            };
            if !transient(&err) {
                return Err(redis_err(&self.name, what)(err));
            }
            self.con = None;
            let t0 = *outage.get_or_insert_with(|| {
                eprintln!(
                    "warning: broker {}: {what} failed ({err}); reconnecting for up to {} s \
                     (cluster.reconnect_secs)",
                    self.name,
                    self.give_up.as_secs()
                );
                std::time::Instant::now()
            });
            let left = self.give_up.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Err(ClusterError::Redis {
                    broker: self.name.clone(),
                    what: format!(
                        "{what}: no connection for {} s, giving up (cluster.reconnect_secs)",
                        self.give_up.as_secs()
                    ),
                    source: err,
                });
            }
            std::thread::sleep(delay.min(left));
            delay = (delay * 2).min(MAX_BACKOFF);
        }
    }

    /// Runs a command (see [`Broker::run`]).
    pub fn cmd<T: ::redis::FromRedisValue>(
        &mut self,
        what: &str,
        c: &::redis::Cmd,
    ) -> Result<T, ClusterError> {
        self.run(what, |con| c.query(con))
    }

    /// Runs a pipeline (see [`Broker::run`]).
    pub fn pipe<T: ::redis::FromRedisValue>(
        &mut self,
        what: &str,
        p: &::redis::Pipeline,
    ) -> Result<T, ClusterError> {
        self.run(what, |con| p.query(con))
    }
}

pub(super) fn redis_err(
    broker: &str,
    what: &str,
) -> impl FnOnce(::redis::RedisError) -> ClusterError {
    let (broker, what) = (broker.to_string(), what.to_string());
    move |source| ClusterError::Redis {
        broker,
        what,
        source,
    }
}

pub(super) fn run_err(e: ClusterError) -> TrainError {
    TrainError::context("the broker")(e)
}

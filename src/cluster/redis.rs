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

use super::{
    ActorLink, ActorTotals, ClusterError, EpochPlan, LearnerLink, LearnerSettings, Next,
    actor_loop, actor_settings, client, redact_url,
};
use crate::games::load_game;
use crate::nn::armac::ArmacPolicyNet;
use crate::rl::actor::{ActorMsg, PastEpoch, Snapshots};
use crate::rl::armac::{ArmacSettings, TrainError, net_config};
use crate::rl::candidates::Candidate;
use crate::rl::trajectory::{decode_replay, encode_replay};
use crate::util::{FileSum, SplitMix64};
use ::redis::{Connection, Value};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The consumer group (and its only consumer) of the learner.
const GROUP: &str = "learner";

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

fn content_id(sum: &FileSum) -> String {
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
                super::CA_CERT_ENV,
                super::CLIENT_CERT_ENV,
                super::CLIENT_KEY_ENV
            )
        } else if text.contains("WRONGPASS") || text.contains("NOAUTH") || lower.contains("auth") {
            format!(
                "authentication failed (check the password in the URL or {})",
                super::PASSWORD_ENV
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
fn transient(e: &::redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.kind() == ::redis::ErrorKind::Server(::redis::ServerErrorKind::BusyLoading)
}

/// Longest wait between two reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

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
    url: String,
    /// The URL without password.
    pub name: String,
    con: Option<Connection>,
    give_up: Duration,
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

fn redis_err(broker: &str, what: &str) -> impl FnOnce(::redis::RedisError) -> ClusterError {
    let (broker, what) = (broker.to_string(), what.to_string());
    move |source| ClusterError::Redis {
        broker,
        what,
        source,
    }
}

fn run_err(e: ClusterError) -> TrainError {
    TrainError::context("the broker")(e)
}

/// A stream id `ms-seq` as a pair that orders like Redis orders ids.
fn parse_id(id: &str) -> (u64, u64) {
    let (a, b) = id.split_once('-').unwrap_or((id, "0"));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    bytes(v).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// Stream fields by name; `None` for pending entries deleted from the stream.
type Fields = Option<HashMap<String, Vec<u8>>>;

fn list(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => Vec::new(),
    }
}

/// One `[id, [field, value, ...]]` entry.
fn entry(e: Value) -> Option<(String, Fields)> {
    let mut parts = list(e).into_iter();
    let id = text(&parts.next()?)?;
    let fields = match parts.next() {
        Some(Value::Nil) | None => None,
        Some(f) => Some(
            list(f)
                .chunks(2)
                .filter_map(|kv| Some((text(kv.first()?)?, bytes(kv.get(1)?)?.to_vec())))
                .collect(),
        ),
    };
    Some((id, fields))
}

/// The entries of an `XRANGE` reply.
pub fn range_entries(reply: Value) -> Vec<(String, Fields)> {
    list(reply).into_iter().filter_map(entry).collect()
}

/// The entries of an `XREADGROUP` reply on one stream: `[[stream, [entries]]]` (nil when
/// nothing arrived).
fn read_entries(reply: Value) -> Vec<(String, Fields)> {
    let mut out = Vec::new();
    let streams = match reply {
        Value::Map(m) => m.into_iter().map(|(_, es)| es).collect::<Vec<_>>(),
        other => list(other)
            .into_iter()
            .filter_map(|s| list(s).into_iter().nth(1))
            .collect(),
    };
    for es in streams {
        out.extend(range_entries(es));
    }
    out
}

/// Encodes a message as stream fields.
fn encode_msg(msg: &ActorMsg, info_len: usize, num_actions: usize) -> Vec<(&'static str, Vec<u8>)> {
    match msg {
        ActorMsg::Trajectory(t) => vec![
            ("k", b"t".to_vec()),
            ("e", t.epoch.to_string().into_bytes()),
            (
                "d",
                encode_replay(std::iter::once(&**t), info_len, num_actions),
            ),
        ],
        ActorMsg::CandidateReturn {
            epoch,
            candidate,
            total,
            count,
        } => vec![
            ("k", b"c".to_vec()),
            ("e", epoch.to_string().into_bytes()),
            ("c", candidate.id().to_string().into_bytes()),
            ("s", total.to_bits().to_string().into_bytes()),
            ("n", count.to_string().into_bytes()),
        ],
    }
}

/// Decodes stream fields; an error names what is wrong.
fn decode_msg(
    f: &HashMap<String, Vec<u8>>,
    info_len: usize,
    num_actions: usize,
) -> Result<ActorMsg, String> {
    let num = |k: &str| -> Result<u64, String> {
        f.get(k)
            .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
            .ok_or_else(|| format!("field `{k}` missing or not a number"))
    };
    match f.get("k").map(|v| &v[..]) {
        Some(b"t") => {
            let d = f.get("d").ok_or("field `d` missing")?;
            let mut ts = decode_replay(d, info_len, num_actions).map_err(|e| e.to_string())?;
            match (ts.pop(), ts.is_empty()) {
                (Some(t), true) => Ok(ActorMsg::Trajectory(Box::new(t))),
                _ => Err("not exactly one trajectory".into()),
            }
        }
        Some(b"c") => Ok(ActorMsg::CandidateReturn {
            epoch: num("e")?,
            candidate: Candidate::from_id(num("c")? as usize).ok_or("unknown candidate")?,
            total: f64::from_bits(num("s")?),
            count: num("n")?,
        }),
        _ => Err("field `k` missing or unknown".into()),
    }
}

/// Appends lines to `$ARMAC_BROKER_AUDIT/<name>-<pid>.txt` when the variable is set.
struct Audit(Option<std::io::BufWriter<std::fs::File>>);

impl Audit {
    fn open(name: &str) -> Audit {
        Audit(std::env::var_os(AUDIT_ENV).and_then(|d| {
            let path = PathBuf::from(d).join(format!(
                "{name}-{}-{:?}.txt",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
                .map(std::io::BufWriter::new)
        }))
    }
    fn line(&mut self, l: &str) {
        if let Some(w) = &mut self.0 {
            let _ = writeln!(w, "{l}");
        }
    }
    fn flush(&mut self) {
        if let Some(w) = &mut self.0 {
            let _ = w.flush();
        }
    }
}

/// Where a stream entry came from: the `a` (actor name) and `u` (`<token>:<seq>`, one token per
/// actor thread, `seq` counting its entries) fields.
#[derive(Clone, Debug, Default)]
struct Origin {
    actor: Option<String>,
    token: Option<(String, u64)>,
}

impl Origin {
    fn of(f: &HashMap<String, Vec<u8>>) -> Origin {
        let s = |k: &str| f.get(k).map(|v| String::from_utf8_lossy(v).into_owned());
        let token = s("u").and_then(|u| {
            let (t, n) = u.rsplit_once(':')?;
            Some((t.to_string(), n.parse().ok()?))
        });
        Origin {
            actor: s("a"),
            token,
        }
    }
}

/// Whether an entry of `origin` repeats one already read, given the highest `seq` read per
/// token (`seen`, updated). An actor thread's entries reach the stream in `seq` order, and a
/// copy written by a retried `XADD` comes after its original.
fn is_copy(seen: &mut HashMap<String, u64>, origin: &Origin) -> bool {
    let Some((token, seq)) = &origin.token else {
        return false;
    };
    match seen.get_mut(token) {
        Some(last) if *last >= *seq => true,
        Some(last) => {
            *last = *seq;
            false
        }
        None => {
            seen.insert(token.clone(), *seq);
            false
        }
    }
}

/// One entry read from the stream, not yet handed to the training loop.
struct Read {
    id: String,
    /// `None`: malformed, deleted, or a copy of an entry already read.
    msg: Option<ActorMsg>,
    origin: Origin,
    duplicate: bool,
}

/// The learner's end of the Redis transport.
pub struct RedisLearner {
    b: Broker,
    keys: Keys,
    cap: usize,
    info_len: usize,
    num_actions: usize,
    /// Entries read from the stream, not yet handed to the training loop.
    buffer: VecDeque<Read>,
    /// Ids handed out since the last commit (acknowledged after the next one).
    handed: Vec<String>,
    cursor: Option<String>,
    /// Snapshot id → content id of the networks already uploaded.
    uploaded: HashMap<u64, String>,
    /// Network keys of the previous epoch (deleted once neither epoch uses them).
    previous_keys: Vec<String>,
    net_file: Box<dyn Fn(u64) -> PathBuf>,
    published: Option<Published>,
    audit: Audit,
    /// Highest `seq` read per actor-thread token: an entry at or below it is a copy that an
    /// actor's retried `XADD` wrote a second time.
    seen: HashMap<String, u64>,
    /// The same, over the entries handed to the training loop only: what a checkpoint holds
    /// ([`LearnerLink::seen`]), so that a resumed learner still knows the copies of entries
    /// the earlier process acknowledged and deleted.
    handed_seen: HashMap<String, u64>,
    /// The broker reconnections already answered by re-reading the pending entries.
    reconnects_seen: u64,
    /// Acting steps and trajectories handed to the training loop per actor since the last
    /// [`LearnerLink::actor_counts`].
    per_actor: HashMap<String, (u64, u64)>,
    /// Entries whose fields could not be decoded (skipped, acknowledged).
    pub malformed: u64,
    /// Entries dropped as copies of entries already read.
    pub duplicates: u64,
}

impl RedisLearner {
    /// Connects, registers the run's config (a fresh run refuses an id that exists) and the
    /// consumer group, and on resume (`cursor` from the checkpoint) re-reads the pending
    /// entries: those up to `cursor` are acknowledged, the later ones processed again. `seen`
    /// is the checkpoint's highest `seq` per actor-thread token (empty for a fresh run).
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        ls: &LearnerSettings,
        config_toml: &str,
        resumed: bool,
        cursor: Option<String>,
        seen: BTreeMap<String, u64>,
        info_len: usize,
        num_actions: usize,
        net_file: Box<dyn Fn(u64) -> PathBuf>,
    ) -> Result<RedisLearner, ClusterError> {
        let mut b = Broker::open(&ls.broker, Duration::from_secs(ls.reconnect_secs))?;
        let keys = Keys::new(&ls.run);
        let created = b.cmd::<Value>(
            "SET config",
            ::redis::cmd("SET")
                .arg(keys.config())
                .arg(config_toml)
                .arg("NX"),
        )? != Value::Nil;
        if !created {
            if !resumed {
                return Err(ClusterError::Usage(format!(
                    "broker {}: run id `{}` already exists (key {}); choose another \
                     cluster.run, or --resume the run that owns it",
                    b.name,
                    ls.run,
                    keys.config()
                )));
            }
            b.cmd::<()>(
                "SET config",
                ::redis::cmd("SET").arg(keys.config()).arg(config_toml),
            )?;
        }
        let group = b.run("XGROUP CREATE", |con| {
            match ::redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(keys.stream())
                .arg(GROUP)
                .arg("0")
                .arg("MKSTREAM")
                .query::<()>(con)
            {
                Err(e) if e.to_string().contains("BUSYGROUP") => Ok(()),
                r => r,
            }
        });
        group?;
        let mut l = RedisLearner {
            b,
            keys,
            cap: ls.stream_cap,
            info_len,
            num_actions,
            buffer: VecDeque::new(),
            handed: Vec::new(),
            cursor: cursor.clone(),
            uploaded: HashMap::new(),
            previous_keys: Vec::new(),
            net_file,
            published: None,
            audit: Audit::open("learner"),
            seen: seen.clone().into_iter().collect(),
            handed_seen: seen.into_iter().collect(),
            reconnects_seen: 0,
            per_actor: HashMap::new(),
            malformed: 0,
            duplicates: 0,
        };
        // Pending entries of an earlier learner process of this run.
        if let Some(c) = &cursor {
            // The checkpoint's cursor: what the earlier process's checkpoint holds ends here
            // (it may have been killed after the checkpoint, before its `commit` line).
            l.audit.line(&format!("resumed-from {c}"));
            l.audit.flush();
        }
        let limit = cursor.as_deref().map(parse_id);
        let mut done_ids = Vec::new();
        for (id, fields) in l.pending_after("0")? {
            if limit.is_some_and(|c| parse_id(&id) <= c) {
                // In the checkpoint already; its origin still marks later copies.
                if let Some(f) = &fields {
                    let origin = Origin::of(f);
                    l.is_copy(&origin);
                    is_copy(&mut l.handed_seen, &origin);
                }
                done_ids.push(id);
            } else {
                let r = l.read(id, fields);
                l.buffer.push_back(r);
            }
        }
        l.ack(&done_ids)?;
        Ok(l)
    }

    /// This learner's pending entries (delivered, not acknowledged) after id `from`.
    fn pending_after(&mut self, from: &str) -> Result<Vec<(String, Fields)>, ClusterError> {
        let mut out = Vec::new();
        let mut from = from.to_string();
        loop {
            let reply: Value = self.b.cmd(
                "XREADGROUP pending",
                ::redis::cmd("XREADGROUP")
                    .arg("GROUP")
                    .arg(GROUP)
                    .arg(GROUP)
                    .arg("COUNT")
                    .arg(1000)
                    .arg("STREAMS")
                    .arg(self.keys.stream())
                    .arg(&from),
            )?;
            let es = read_entries(reply);
            let Some(last) = es.last() else { break };
            from = last.0.clone();
            out.extend(es);
        }
        Ok(out)
    }

    /// Whether an entry of `origin` repeats one already read (and records it).
    fn is_copy(&mut self, origin: &Origin) -> bool {
        is_copy(&mut self.seen, origin)
    }

    /// Decodes an entry read from the stream.
    fn read(&mut self, id: String, fields: Fields) -> Read {
        let Some(f) = fields else {
            return Read {
                id,
                msg: None,
                origin: Origin::default(),
                duplicate: false,
            };
        };
        let origin = Origin::of(&f);
        if self.is_copy(&origin) {
            self.duplicates += 1;
            return Read {
                id,
                msg: None,
                origin,
                duplicate: true,
            };
        }
        let msg = match decode_msg(&f, self.info_len, self.num_actions) {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("warning: broker entry {id} skipped: {e}");
                self.malformed += 1;
                None
            }
        };
        Read {
            id,
            msg,
            origin,
            duplicate: false,
        }
    }

    /// Acknowledges and deletes `ids`.
    fn ack(&mut self, ids: &[String]) -> Result<(), ClusterError> {
        for chunk in ids.chunks(1000) {
            let mut p = ::redis::pipe();
            p.cmd("XACK").arg(self.keys.stream()).arg(GROUP).arg(chunk);
            p.cmd("XDEL").arg(self.keys.stream()).arg(chunk);
            self.b.pipe::<()>("XACK", &p)?;
        }
        Ok(())
    }

    /// The last id this process knows of: the newest buffered or handed-out entry.
    fn last_known(&self) -> String {
        self.buffer
            .back()
            .map(|r| r.id.clone())
            .or_else(|| self.cursor.clone())
            .unwrap_or_else(|| "0".into())
    }

    /// Reads new entries into the buffer, blocking at most `block` (None: not at all).
    ///
    /// After a reconnection the entries come from this consumer's pending list instead: a
    /// `XREADGROUP` whose reply the dropped connection lost has still delivered its entries
    /// (the server recorded them as pending, in its append-only file too), and a retried
    /// `>` read would skip them.
    fn fill(&mut self, block: Option<Duration>) -> Result<(), ClusterError> {
        let mut c = ::redis::cmd("XREADGROUP");
        c.arg("GROUP").arg(GROUP).arg(GROUP).arg("COUNT").arg(512);
        if let Some(b) = block {
            c.arg("BLOCK").arg(b.as_millis().max(1) as u64);
        }
        c.arg("STREAMS").arg(self.keys.stream()).arg(">");
        let from = self.last_known();
        let reply: Value = self
            .b
            .cmd("XREADGROUP", &c)
            .map_err(|e| self.lost_state(e))?;
        let mut es = read_entries(reply);
        if self.b.reconnects != self.reconnects_seen {
            self.reconnects_seen = self.b.reconnects;
            es = self.pending_after(&from)?;
            eprintln!(
                "broker {}: consumer group state re-read after reconnecting ({} entries \
                 pending after {from})",
                self.b.name,
                es.len()
            );
        }
        for (id, fields) in es {
            let r = self.read(id, fields);
            self.buffer.push_back(r);
        }
        Ok(())
    }

    /// Turns "no such consumer group" into what it means: the broker lost the run's data.
    fn lost_state(&self, e: ClusterError) -> ClusterError {
        match e {
            ClusterError::Redis { source, .. } if source.to_string().contains("NOGROUP") => {
                ClusterError::Usage(format!(
                    "broker {}: the run's stream {} or its consumer group is gone: the broker \
                     lost its data (restarted without persistence? run redis-server with \
                     --appendonly yes)",
                    self.b.name,
                    self.keys.stream()
                ))
            }
            e => e,
        }
    }

    /// The next entry from the buffer, recorded as processed.
    fn pop(&mut self) -> Option<Option<ActorMsg>> {
        let r = self.buffer.pop_front()?;
        // Written through at once: a killed learner's file shows all it processed.
        let u = r
            .origin
            .token
            .as_ref()
            .map(|(t, n)| format!(" {t}:{n}"))
            .unwrap_or_default();
        let dup = if r.duplicate { " copy" } else { "" };
        self.audit.line(&format!("{}{u}{dup}", r.id));
        self.audit.flush();
        if let (Some(ActorMsg::Trajectory(t)), Some(a)) = (&r.msg, &r.origin.actor) {
            let c = self.per_actor.entry(a.clone()).or_default();
            c.0 += t.len() as u64;
            c.1 += 1;
        }
        if !r.duplicate {
            is_copy(&mut self.handed_seen, &r.origin);
        }
        self.cursor = Some(r.id.clone());
        self.handed.push(r.id);
        Some(r.msg)
    }

    fn next(&mut self, block: Option<Duration>) -> Result<Option<ActorMsg>, ClusterError> {
        loop {
            if self.buffer.is_empty() {
                self.fill(block)?;
            }
            match self.pop() {
                None => return Ok(None),
                Some(Some(m)) => return Ok(Some(m)),
                // A malformed, deleted or repeated entry: counted as read, skipped.
                Some(None) => continue,
            }
        }
    }

    /// Uploads the network of snapshot `id` unless already there; its content id.
    fn upload(&mut self, id: u64) -> Result<String, ClusterError> {
        if let Some(c) = self.uploaded.get(&id) {
            return Ok(c.clone());
        }
        let path = (self.net_file)(id);
        let bytes = std::fs::read(&path).map_err(|e| {
            ClusterError::Usage(format!("cannot read network {}: {e}", path.display()))
        })?;
        let c = content_id(&FileSum::of(&bytes));
        self.b.cmd::<()>(
            "SET network",
            ::redis::cmd("SET")
                .arg(self.keys.net(&c))
                .arg(bytes)
                .arg("NX"),
        )?;
        self.uploaded.insert(id, c.clone());
        Ok(c)
    }

    fn publish(&mut self, p: &Published) -> Result<(), ClusterError> {
        let json = serde_json::to_string(p).expect("epoch descriptor serialises");
        self.b.cmd(
            "SET epoch",
            ::redis::cmd("SET").arg(self.keys.epoch()).arg(json),
        )
    }

    fn begin(&mut self, plan: &EpochPlan, episodes: i64) -> Result<(), ClusterError> {
        let mut ids = vec![plan.latest];
        for &(a, b) in plan.past.iter().chain(plan.previous.iter()) {
            ids.extend([a, b]);
        }
        let mut nets = HashMap::new();
        for id in ids {
            let c = self.upload(id)?;
            nets.insert(id, c);
        }
        // Quota first, then the descriptor: an actor that sees the epoch finds its quota.
        self.b.cmd::<()>(
            "SET quota",
            ::redis::cmd("SET")
                .arg(self.keys.quota(plan.epoch))
                .arg(episodes),
        )?;
        let p = Published {
            plan: plan.clone(),
            nets,
            done: false,
        };
        self.publish(&p)?;
        if let Some(e) = plan.epoch.checked_sub(2) {
            self.b
                .cmd::<()>("DEL quota", ::redis::cmd("DEL").arg(self.keys.quota(e)))?;
        }
        // Networks neither this epoch nor the previous one uses leave the broker (an actor
        // still fetching the previous epoch's finds them; older ones it re-reads the epoch).
        let keep: Vec<String> = p.nets.values().map(|c| self.keys.net(c)).collect();
        let gone: Vec<String> = self
            .previous_keys
            .iter()
            .filter(|k| !keep.contains(k))
            .cloned()
            .collect();
        if !gone.is_empty() {
            self.b
                .cmd::<()>("DEL networks", ::redis::cmd("DEL").arg(&gone))?;
        }
        let live: std::collections::HashSet<&String> = p.nets.values().collect();
        self.uploaded.retain(|_, c| live.contains(c));
        self.previous_keys = keep;
        self.published = Some(p);
        Ok(())
    }
}

impl LearnerLink for RedisLearner {
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<ActorMsg>, TrainError> {
        self.next(Some(timeout)).map_err(run_err)
    }

    fn try_recv(&mut self) -> Result<Option<ActorMsg>, TrainError> {
        self.next(None).map_err(run_err)
    }

    fn top_up(&mut self, epoch: u64, n: i64) -> Result<(), TrainError> {
        let key = self.keys.quota(epoch);
        let left: Option<i64> = self
            .b
            .cmd("GET quota", ::redis::cmd("GET").arg(&key))
            .map_err(run_err)?;
        if left.unwrap_or(0) <= 0 {
            self.b
                .cmd::<i64>("INCRBY quota", ::redis::cmd("INCRBY").arg(&key).arg(n))
                .map_err(run_err)?;
        }
        Ok(())
    }

    fn begin_epoch(&mut self, plan: &EpochPlan, episodes: i64) -> Result<(), TrainError> {
        self.begin(plan, episodes).map_err(run_err)
    }

    fn cursor(&self) -> Option<String> {
        self.cursor.clone()
    }

    fn seen(&self) -> BTreeMap<String, u64> {
        self.handed_seen.clone().into_iter().collect()
    }

    fn wants_checkpoint(&self) -> bool {
        2 * self.handed.len() >= self.cap
    }

    fn committed(&mut self) -> Result<(), TrainError> {
        self.audit.line("commit");
        self.audit.flush();
        let ids = std::mem::take(&mut self.handed);
        self.ack(&ids).map_err(run_err)
    }

    fn close(&mut self) -> Result<(), TrainError> {
        self.audit.flush();
        if let Some(mut p) = self.published.take() {
            p.done = true;
            self.publish(&p).map_err(run_err)?;
        }
        Ok(())
    }

    fn queue_depth(&mut self) -> Option<u64> {
        let len: u64 = self
            .b
            .cmd("XLEN", ::redis::cmd("XLEN").arg(self.keys.stream()))
            .ok()?;
        Some(len.saturating_sub(self.handed.len() as u64))
    }

    fn actor_counts(&mut self) -> Vec<(String, u64, u64)> {
        let mut v: Vec<(String, u64, u64)> = self
            .per_actor
            .drain()
            .map(|(a, (steps, trajs))| (a, steps, trajs))
            .collect();
        v.sort();
        v
    }
}

/// One actor thread's end of the Redis transport.
pub struct RemoteActor {
    b: Broker,
    keys: Keys,
    net_cfg: crate::nn::armac::ArmacNetConfig,
    cap: usize,
    info_len: usize,
    num_actions: usize,
    /// Networks by content id.
    nets: HashMap<String, Arc<ArmacPolicyNet>>,
    current: Option<Arc<Snapshots>>,
    audit: Audit,
    /// This actor's name in the learner's TensorBoard (`<host>-<pid>`, one per process).
    name: String,
    /// Random token of this actor thread: entries carry `u = <token>:<seq>`, so that the
    /// learner recognises an entry written twice by a retried `XADD`.
    token: String,
    seq: u64,
    /// Times this actor waited because the stream was full.
    pub full_waits: u64,
}

impl RemoteActor {
    /// Fetches the network with content id `c` (cached), checked against its sum; `None` when
    /// the broker no longer holds it (a newer epoch replaced it).
    fn net(&mut self, c: &str) -> Result<Option<Arc<ArmacPolicyNet>>, ClusterError> {
        if let Some(n) = self.nets.get(c) {
            return Ok(Some(n.clone()));
        }
        let key = self.keys.net(c);
        let bytes: Option<Vec<u8>> = self.b.cmd("GET network", ::redis::cmd("GET").arg(&key))?;
        let Some(bytes) = bytes else { return Ok(None) };
        let got = content_id(&FileSum::of(&bytes));
        if got != c {
            return Err(ClusterError::Usage(format!(
                "broker {}: network {key} fails its checksum (content {got}); corrupt broker \
                 data",
                self.b.name
            )));
        }
        let net =
            ArmacPolicyNet::load_bytes(self.net_cfg.clone(), std::path::Path::new(&key), bytes)
                .map_err(|e| ClusterError::Usage(format!("network {key} from the broker: {e}")))?;
        let net = Arc::new(net);
        self.nets.insert(c.to_string(), net.clone());
        Ok(Some(net))
    }

    /// The snapshots of `p`, or `None` when a network is missing (retry with a fresh read).
    fn snapshots(&mut self, p: &Published) -> Result<Option<Snapshots>, ClusterError> {
        let broker = self.b.name.clone();
        let mut get = |id: u64| -> Result<Option<Arc<ArmacPolicyNet>>, ClusterError> {
            match p.nets.get(&id) {
                Some(c) => self.net(c),
                None => Err(ClusterError::Usage(format!(
                    "broker {broker}: epoch {} names no network for snapshot {id}",
                    p.plan.epoch
                ))),
            }
        };
        let Some(latest) = get(p.plan.latest)? else {
            return Ok(None);
        };
        let mut past = Vec::new();
        for &(a, b) in &p.plan.past {
            let (Some(policy), Some(critic)) = (get(a)?, get(b)?) else {
                return Ok(None);
            };
            past.push(PastEpoch {
                policy,
                critic,
                exact: None,
                table: None,
            });
        }
        let previous = match p.plan.previous {
            None => None,
            Some((a, b)) => {
                let (Some(policy), Some(critic)) = (get(a)?, get(b)?) else {
                    return Ok(None);
                };
                Some(PastEpoch {
                    policy,
                    critic,
                    exact: None,
                    table: None,
                })
            }
        };
        // Networks no longer published leave the cache.
        let live: std::collections::HashSet<&String> = p.nets.values().collect();
        self.nets.retain(|c, _| live.contains(c));
        Ok(Some(Snapshots {
            epoch: p.plan.epoch,
            latest,
            latest_table: None,
            past,
            previous,
            best: p.plan.best,
        }))
    }
}

impl ActorLink for RemoteActor {
    type Error = ClusterError;

    fn next_group(&mut self, games: usize) -> Result<Next, ClusterError> {
        let mut pipe = ::redis::pipe();
        pipe.cmd("GET")
            .arg(self.keys.epoch())
            .cmd("XLEN")
            .arg(self.keys.stream());
        let (desc, len): (Option<String>, u64) = self.b.pipe("GET epoch", &pipe)?;
        let Some(desc) = desc else {
            return Ok(Next::Wait(Duration::from_millis(50)));
        };
        let p: Published = serde_json::from_str(&desc).map_err(|e| {
            ClusterError::Usage(format!(
                "broker {}: {} is not an epoch descriptor: {e}",
                self.b.name,
                self.keys.epoch()
            ))
        })?;
        if p.done {
            return Ok(Next::Stop);
        }
        if self.current.as_ref().map(|s| s.epoch) != Some(p.plan.epoch) {
            match self.snapshots(&p)? {
                Some(s) => self.current = Some(Arc::new(s)),
                None => return Ok(Next::Wait(Duration::from_millis(5))),
            }
        }
        if len as usize > self.cap {
            self.full_waits += 1;
            return Ok(Next::Wait(Duration::from_millis(10)));
        }
        // A retried DECRBY or INCRBY (after a lost reply) moves the quota by one group too
        // many: the epoch then ends a group early (the learner tops the quota up) or late.
        let key = self.keys.quota(p.plan.epoch);
        let left: i64 = self
            .b
            .cmd("DECRBY quota", ::redis::cmd("DECRBY").arg(&key).arg(games))?;
        if left + games as i64 <= 0 {
            // The epoch's quota is used up: give the claim back and wait for the next epoch.
            self.b
                .cmd::<i64>("INCRBY quota", ::redis::cmd("INCRBY").arg(&key).arg(games))?;
            return Ok(Next::Wait(Duration::from_millis(2)));
        }
        Ok(Next::Play(self.current.clone().expect("set above")))
    }

    fn send(&mut self, msgs: Vec<ActorMsg>) -> Result<bool, ClusterError> {
        let mut p = ::redis::pipe();
        for m in &msgs {
            self.seq += 1;
            let c = p.cmd("XADD").arg(self.keys.stream()).arg("*");
            c.arg("a")
                .arg(&self.name)
                .arg("u")
                .arg(format!("{}:{}", self.token, self.seq));
            for (k, v) in encode_msg(m, self.info_len, self.num_actions) {
                c.arg(k).arg(v);
            }
        }
        // Retried whole after a dropped connection: entries that made it the first time are
        // then in the stream twice, with the same `u`, and the learner keeps the first.
        let ids: Vec<String> = self.b.pipe("XADD", &p)?;
        for (id, n) in ids.iter().zip(self.seq + 1 - msgs.len() as u64..) {
            self.audit.line(&format!("{id} {}:{n}", self.token));
        }
        self.audit.flush();
        Ok(true)
    }
}

/// What an actor needs of its run's config: the ARMAC settings and the `[cluster]` section.
#[derive(Clone, Debug)]
pub struct ActorConfig {
    pub settings: ArmacSettings,
    pub cluster: Option<super::ClusterConfig>,
}

/// Reads the config a learner published (parsed TOML; the second argument names where it came
/// from, for errors). The config layer supplies it (`crate::run::armac::actor_config`).
pub type ConfigReader =
    fn(toml::Table, &str) -> Result<ActorConfig, Box<dyn std::error::Error + Send + Sync>>;

/// Options of an `armac-actor` process.
#[derive(Clone, Debug)]
pub struct ActorOptions {
    pub run: String,
    pub broker: String,
    pub threads: usize,
    /// Seed of the actors' random streams (default: from the clock and process id).
    pub seed: Option<u64>,
    /// How long to wait for a run that does not exist yet (its learner not started);
    /// `None`: fail at once.
    pub wait: Option<Duration>,
    /// How long a lost broker connection is retried (default: the run's
    /// `cluster.reconnect_secs`).
    pub reconnect_secs: Option<u64>,
    /// Reads the run's config fetched from the broker.
    pub read_config: ConfigReader,
}

/// What an `armac-actor` process did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActorReport {
    pub totals: ActorTotals,
    pub full_waits: u64,
}

/// This machine's name, for actor names.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs `opts.threads` actors against run `opts.run` until its learner says it is done.
/// Errors (before any thread starts) name the broker or the run id.
pub fn run_actors(opts: &ActorOptions) -> Result<ActorReport, ClusterError> {
    let mut b = Broker::open(
        &opts.broker,
        Duration::from_secs(opts.reconnect_secs.unwrap_or(60)),
    )?;
    let broker = b.name.clone();
    let keys = Keys::new(&opts.run);
    let t0 = std::time::Instant::now();
    let mut said = false;
    let text = loop {
        let text: Option<String> = b.cmd("GET config", ::redis::cmd("GET").arg(keys.config()))?;
        match (text, opts.wait) {
            (Some(t), _) => break t,
            (None, Some(w)) if t0.elapsed() < w => {
                if !said {
                    eprintln!(
                        "run `{}` does not exist on broker {broker} yet; waiting up to {} s \
                         for its learner (--wait)",
                        opts.run,
                        w.as_secs()
                    );
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            (None, w) => {
                let waited = w
                    .map(|w| format!(" after waiting {} s (--wait)", w.as_secs()))
                    .unwrap_or_default();
                return Err(ClusterError::Usage(format!(
                    "broker {broker}: run `{}` does not exist{waited} (no key {}); start its \
                     learner with `armac-train --role learner` first (or give armac-actor \
                     --wait SECS), or check --run",
                    opts.run,
                    keys.config()
                )));
            }
        }
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        ClusterError::Usage(format!(
            "broker {broker}: config of run `{}`: {e}",
            opts.run
        ))
    })?;
    let config = (opts.read_config)(table, &format!("{} on {broker}", keys.config()))
        .map_err(ClusterError::Config)?;
    let s = config.settings;
    let game = load_game(&s.game)
        .map_err(|e| ClusterError::Usage(format!("game of run `{}`: {e}", opts.run)))?;
    let net_cfg = net_config(&game, &s);
    let settings = actor_settings(&game, &s);
    let cap = config
        .cluster
        .as_ref()
        .map(|c| c.stream_cap)
        .unwrap_or(usize::MAX);
    let give_up = Duration::from_secs(opts.reconnect_secs.unwrap_or_else(|| {
        config
            .cluster
            .as_ref()
            .map_or(super::DEFAULT_RECONNECT_SECS, |c| c.reconnect_secs)
    }));
    let seed = opts.seed.unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ ((std::process::id() as u64) << 32)
    });
    // Tokens must differ between actor threads anywhere, also when two processes are given
    // the same --seed: drawn from the clock, the process id and the thread index.
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let name = format!("{}-{}", host_name(), std::process::id());
    let mut handles = Vec::new();
    for a in 0..opts.threads.max(1) {
        let tb = Broker::open(&opts.broker, give_up)?;
        let (game, settings, keys, net_cfg, name) = (
            game.clone(),
            settings.clone(),
            keys.clone(),
            net_cfg.clone(),
            name.clone(),
        );
        let mut rng = SplitMix64::new(SplitMix64::new(seed ^ (a as u64 + 1)).next_u64());
        let token = format!(
            "{:016x}",
            SplitMix64::new(clock ^ ((std::process::id() as u64) << 20) ^ a as u64).next_u64()
        );
        handles.push(std::thread::spawn(
            move || -> Result<ActorReport, ClusterError> {
                let mut link = RemoteActor {
                    b: tb,
                    keys,
                    info_len: net_cfg.input_size,
                    num_actions: net_cfg.num_actions,
                    net_cfg,
                    cap,
                    nets: HashMap::new(),
                    current: None,
                    audit: Audit::open("actor"),
                    name,
                    token,
                    seq: 0,
                    full_waits: 0,
                };
                let totals = actor_loop(&mut link, &game, &settings, &mut rng)?;
                Ok(ActorReport {
                    totals,
                    full_waits: link.full_waits,
                })
            },
        ));
    }
    let mut report = ActorReport::default();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| ClusterError::Usage("an actor thread panicked".into()))??;
        report.totals.groups += r.totals.groups;
        report.totals.trajectories += r.totals.trajectories;
        report.totals.steps += r.totals.steps;
        report.full_waits += r.full_waits;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_written_again_by_a_retried_xadd_are_copies() {
        let origin = |u: &str| {
            let f: HashMap<String, Vec<u8>> = [("u".to_string(), u.as_bytes().to_vec())].into();
            Origin::of(&f)
        };
        let mut seen = HashMap::new();
        // Token a sends 1..3, the connection drops after 1 and 2 got in, the pipeline is sent
        // again: 1, 2 come twice. Token b is another actor thread.
        let stream = ["a:1", "a:2", "b:1", "a:1", "a:2", "a:3", "b:2", "b:2"];
        let copies: Vec<bool> = stream
            .iter()
            .map(|u| is_copy(&mut seen, &origin(u)))
            .collect();
        assert_eq!(
            copies,
            [false, false, false, true, true, false, false, true]
        );
        // Entries without a token (older actors) are never copies; a bad `u` is ignored.
        assert!(!is_copy(&mut seen, &Origin::default()));
        assert!(origin("a:x").token.is_none());
        assert_eq!(origin("ab:cd:7").token, Some(("ab:cd".to_string(), 7)));
    }

    #[test]
    fn stream_ids_order_numerically() {
        assert!(parse_id("10-0") > parse_id("9-5"));
        assert!(parse_id("5-10") > parse_id("5-9"));
        assert_eq!(parse_id("7-3"), (7, 3));
    }

    #[test]
    fn candidate_returns_survive_the_stream_encoding() {
        let m = ActorMsg::CandidateReturn {
            epoch: 7,
            candidate: Candidate::all()[2],
            total: -1.25,
            count: 64,
        };
        let f: HashMap<String, Vec<u8>> = encode_msg(&m, 3, 2)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        match decode_msg(&f, 3, 2).unwrap() {
            ActorMsg::CandidateReturn {
                epoch,
                candidate,
                total,
                count,
            } => {
                assert_eq!(
                    (epoch, candidate, total, count),
                    (7, Candidate::all()[2], -1.25, 64)
                );
            }
            _ => panic!("wrong kind"),
        }
        let mut bad = f.clone();
        bad.insert("k".into(), b"x".to_vec());
        assert!(decode_msg(&bad, 3, 2).is_err());
    }
}

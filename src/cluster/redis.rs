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
//! | `stream` | trajectories and candidate returns (`XADD`); consumer group `learner` |
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
use crate::rl::candidates::Candidate;
use crate::rl::trajectory::{decode_replay, encode_replay};
use crate::run::RunError;
use crate::run::generation::FileSum;
use crate::util::SplitMix64;
use ::redis::{Connection, Value};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
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
        let what = if text.contains("WRONGPASS")
            || text.contains("NOAUTH")
            || text.to_lowercase().contains("auth")
        {
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

fn redis_err(broker: &str, what: &str) -> impl FnOnce(::redis::RedisError) -> ClusterError {
    let (broker, what) = (broker.to_string(), what.to_string());
    move |source| ClusterError::Redis {
        broker,
        what,
        source,
    }
}

fn run_err(e: ClusterError) -> RunError {
    RunError::context("the broker")(e)
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

/// The learner's end of the Redis transport.
pub struct RedisLearner {
    con: Connection,
    broker: String,
    keys: Keys,
    cap: usize,
    info_len: usize,
    num_actions: usize,
    /// Entries read from the stream, not yet handed to the training loop.
    buffer: VecDeque<(String, Option<ActorMsg>)>,
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
    /// Entries whose fields could not be decoded (skipped, acknowledged).
    pub malformed: u64,
}

impl RedisLearner {
    /// Connects, registers the run's config (a fresh run refuses an id that exists) and the
    /// consumer group, and on resume (`cursor` from the checkpoint) re-reads the pending
    /// entries: those up to `cursor` are acknowledged, the later ones processed again.
    pub fn open(
        ls: &LearnerSettings,
        config_toml: &str,
        resumed: bool,
        cursor: Option<String>,
        info_len: usize,
        num_actions: usize,
        net_file: Box<dyn Fn(u64) -> PathBuf>,
    ) -> Result<RedisLearner, ClusterError> {
        let mut con = connect(&ls.broker)?;
        let keys = Keys::new(&ls.run);
        let b = ls.broker.clone();
        let created = ::redis::cmd("SET")
            .arg(keys.config())
            .arg(config_toml)
            .arg("NX")
            .query::<Value>(&mut con)
            .map_err(redis_err(&b, "SET config"))?
            != Value::Nil;
        if !created {
            if !resumed {
                return Err(ClusterError::Usage(format!(
                    "broker {b}: run id `{}` already exists (key {}); choose another \
                     cluster.run, or --resume the run that owns it",
                    ls.run,
                    keys.config()
                )));
            }
            ::redis::cmd("SET")
                .arg(keys.config())
                .arg(config_toml)
                .query::<()>(&mut con)
                .map_err(redis_err(&b, "SET config"))?;
        }
        match ::redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(keys.stream())
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query::<()>(&mut con)
        {
            Ok(()) => {}
            Err(e) if e.to_string().contains("BUSYGROUP") => {}
            Err(e) => return Err(redis_err(&b, "XGROUP CREATE")(e)),
        }
        let mut l = RedisLearner {
            con,
            broker: b,
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
            malformed: 0,
        };
        // Pending entries of an earlier learner process of this run.
        if let Some(c) = &cursor {
            // The checkpoint's cursor: what the earlier process's checkpoint holds ends here
            // (it may have been killed after the checkpoint, before its `commit` line).
            l.audit.line(&format!("resumed-from {c}"));
            l.audit.flush();
        }
        let limit = cursor.as_deref().map(parse_id);
        let mut from = "0".to_string();
        let mut done_ids = Vec::new();
        loop {
            let reply: Value = ::redis::cmd("XREADGROUP")
                .arg("GROUP")
                .arg(GROUP)
                .arg(GROUP)
                .arg("COUNT")
                .arg(1000)
                .arg("STREAMS")
                .arg(l.keys.stream())
                .arg(&from)
                .query(&mut l.con)
                .map_err(redis_err(&l.broker, "XREADGROUP pending"))?;
            let es = read_entries(reply);
            let Some(last) = es.last() else { break };
            from = last.0.clone();
            for (id, fields) in es {
                if limit.is_some_and(|c| parse_id(&id) <= c) {
                    done_ids.push(id);
                } else {
                    let msg = fields.and_then(|f| l.decode(&id, &f));
                    l.buffer.push_back((id, msg));
                }
            }
        }
        l.ack(&done_ids)?;
        Ok(l)
    }

    fn decode(&mut self, id: &str, f: &HashMap<String, Vec<u8>>) -> Option<ActorMsg> {
        match decode_msg(f, self.info_len, self.num_actions) {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("warning: broker entry {id} skipped: {e}");
                self.malformed += 1;
                None
            }
        }
    }

    /// Acknowledges and deletes `ids`.
    fn ack(&mut self, ids: &[String]) -> Result<(), ClusterError> {
        for chunk in ids.chunks(1000) {
            let mut p = ::redis::pipe();
            p.cmd("XACK").arg(self.keys.stream()).arg(GROUP).arg(chunk);
            p.cmd("XDEL").arg(self.keys.stream()).arg(chunk);
            p.query::<()>(&mut self.con)
                .map_err(redis_err(&self.broker, "XACK"))?;
        }
        Ok(())
    }

    /// Reads new entries into the buffer, blocking at most `block` (None: not at all).
    fn fill(&mut self, block: Option<Duration>) -> Result<(), ClusterError> {
        let mut c = ::redis::cmd("XREADGROUP");
        c.arg("GROUP").arg(GROUP).arg(GROUP).arg("COUNT").arg(512);
        if let Some(b) = block {
            c.arg("BLOCK").arg(b.as_millis().max(1) as u64);
        }
        c.arg("STREAMS").arg(self.keys.stream()).arg(">");
        let reply: Value = c
            .query(&mut self.con)
            .map_err(redis_err(&self.broker, "XREADGROUP"))?;
        for (id, fields) in read_entries(reply) {
            let msg = fields.and_then(|f| self.decode(&id, &f));
            self.buffer.push_back((id, msg));
        }
        Ok(())
    }

    /// The next entry from the buffer, recorded as processed.
    fn pop(&mut self) -> Option<Option<ActorMsg>> {
        let (id, msg) = self.buffer.pop_front()?;
        // Written through at once: a killed learner's file shows all it processed.
        self.audit.line(&id);
        self.audit.flush();
        self.cursor = Some(id.clone());
        self.handed.push(id);
        Some(msg)
    }

    fn next(&mut self, block: Option<Duration>) -> Result<Option<ActorMsg>, ClusterError> {
        loop {
            if self.buffer.is_empty() {
                self.fill(block)?;
            }
            match self.pop() {
                None => return Ok(None),
                Some(Some(m)) => return Ok(Some(m)),
                // A malformed or deleted entry: counted as read, skipped.
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
        ::redis::cmd("SET")
            .arg(self.keys.net(&c))
            .arg(bytes)
            .arg("NX")
            .query::<()>(&mut self.con)
            .map_err(redis_err(&self.broker, "SET network"))?;
        self.uploaded.insert(id, c.clone());
        Ok(c)
    }

    fn publish(&mut self, p: &Published) -> Result<(), ClusterError> {
        let json = serde_json::to_string(p).expect("epoch descriptor serialises");
        ::redis::cmd("SET")
            .arg(self.keys.epoch())
            .arg(json)
            .query::<()>(&mut self.con)
            .map_err(redis_err(&self.broker, "SET epoch"))
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
        ::redis::cmd("SET")
            .arg(self.keys.quota(plan.epoch))
            .arg(episodes)
            .query::<()>(&mut self.con)
            .map_err(redis_err(&self.broker, "SET quota"))?;
        let p = Published {
            plan: plan.clone(),
            nets,
            done: false,
        };
        self.publish(&p)?;
        if let Some(e) = plan.epoch.checked_sub(2) {
            let _ = ::redis::cmd("DEL")
                .arg(self.keys.quota(e))
                .query::<()>(&mut self.con);
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
            ::redis::cmd("DEL")
                .arg(&gone)
                .query::<()>(&mut self.con)
                .map_err(redis_err(&self.broker, "DEL networks"))?;
        }
        let live: std::collections::HashSet<&String> = p.nets.values().collect();
        self.uploaded.retain(|_, c| live.contains(c));
        self.previous_keys = keep;
        self.published = Some(p);
        Ok(())
    }
}

impl LearnerLink for RedisLearner {
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<ActorMsg>, RunError> {
        self.next(Some(timeout)).map_err(run_err)
    }

    fn try_recv(&mut self) -> Result<Option<ActorMsg>, RunError> {
        self.next(None).map_err(run_err)
    }

    fn top_up(&mut self, epoch: u64, n: i64) -> Result<(), RunError> {
        let key = self.keys.quota(epoch);
        let left: Option<i64> = ::redis::cmd("GET")
            .arg(&key)
            .query(&mut self.con)
            .map_err(|e| run_err(redis_err(&self.broker, "GET quota")(e)))?;
        if left.unwrap_or(0) <= 0 {
            ::redis::cmd("INCRBY")
                .arg(&key)
                .arg(n)
                .query::<i64>(&mut self.con)
                .map_err(|e| run_err(redis_err(&self.broker, "INCRBY quota")(e)))?;
        }
        Ok(())
    }

    fn begin_epoch(&mut self, plan: &EpochPlan, episodes: i64) -> Result<(), RunError> {
        self.begin(plan, episodes).map_err(run_err)
    }

    fn cursor(&self) -> Option<String> {
        self.cursor.clone()
    }

    fn wants_checkpoint(&self) -> bool {
        2 * self.handed.len() >= self.cap
    }

    fn committed(&mut self) -> Result<(), RunError> {
        self.audit.line("commit");
        self.audit.flush();
        let ids = std::mem::take(&mut self.handed);
        self.ack(&ids).map_err(run_err)
    }

    fn close(&mut self) -> Result<(), RunError> {
        self.audit.flush();
        if let Some(mut p) = self.published.take() {
            p.done = true;
            self.publish(&p).map_err(run_err)?;
        }
        Ok(())
    }

    fn queue_depth(&mut self) -> Option<u64> {
        let len: u64 = ::redis::cmd("XLEN")
            .arg(self.keys.stream())
            .query(&mut self.con)
            .ok()?;
        Some(len.saturating_sub(self.handed.len() as u64))
    }
}

/// One actor thread's end of the Redis transport.
pub struct RemoteActor {
    con: Connection,
    broker: String,
    keys: Keys,
    net_cfg: crate::nn::armac::ArmacNetConfig,
    cap: usize,
    info_len: usize,
    num_actions: usize,
    /// Networks by content id.
    nets: HashMap<String, Arc<ArmacPolicyNet>>,
    current: Option<Arc<Snapshots>>,
    audit: Audit,
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
        let bytes: Option<Vec<u8>> = ::redis::cmd("GET")
            .arg(&key)
            .query(&mut self.con)
            .map_err(redis_err(&self.broker, "GET network"))?;
        let Some(bytes) = bytes else { return Ok(None) };
        let got = content_id(&FileSum::of(&bytes));
        if got != c {
            return Err(ClusterError::Usage(format!(
                "broker {}: network {key} fails its checksum (content {got}); corrupt broker \
                 data",
                self.broker
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
        let mut get = |id: u64| -> Result<Option<Arc<ArmacPolicyNet>>, ClusterError> {
            match p.nets.get(&id) {
                Some(c) => self.net(c),
                None => Err(ClusterError::Usage(format!(
                    "broker {}: epoch {} names no network for snapshot {id}",
                    self.broker, p.plan.epoch
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
                })
            }
        };
        // Networks no longer published leave the cache.
        let live: std::collections::HashSet<&String> = p.nets.values().collect();
        self.nets.retain(|c, _| live.contains(c));
        Ok(Some(Snapshots {
            epoch: p.plan.epoch,
            latest,
            past,
            previous,
            best: p.plan.best,
        }))
    }
}

impl ActorLink for RemoteActor {
    fn next_group(&mut self, games: usize) -> Result<Next, ClusterError> {
        let (desc, len): (Option<String>, u64) = ::redis::pipe()
            .cmd("GET")
            .arg(self.keys.epoch())
            .cmd("XLEN")
            .arg(self.keys.stream())
            .query(&mut self.con)
            .map_err(redis_err(&self.broker, "GET epoch"))?;
        let Some(desc) = desc else {
            return Ok(Next::Wait(Duration::from_millis(50)));
        };
        let p: Published = serde_json::from_str(&desc).map_err(|e| {
            ClusterError::Usage(format!(
                "broker {}: {} is not an epoch descriptor: {e}",
                self.broker,
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
        let key = self.keys.quota(p.plan.epoch);
        let left: i64 = ::redis::cmd("DECRBY")
            .arg(&key)
            .arg(games)
            .query(&mut self.con)
            .map_err(redis_err(&self.broker, "DECRBY quota"))?;
        if left + games as i64 <= 0 {
            // The epoch's quota is used up: give the claim back and wait for the next epoch.
            ::redis::cmd("INCRBY")
                .arg(&key)
                .arg(games)
                .query::<i64>(&mut self.con)
                .map_err(redis_err(&self.broker, "INCRBY quota"))?;
            return Ok(Next::Wait(Duration::from_millis(2)));
        }
        Ok(Next::Play(self.current.clone().expect("set above")))
    }

    fn send(&mut self, msgs: Vec<ActorMsg>) -> Result<bool, ClusterError> {
        let mut p = ::redis::pipe();
        for m in &msgs {
            let c = p.cmd("XADD").arg(self.keys.stream()).arg("*");
            for (k, v) in encode_msg(m, self.info_len, self.num_actions) {
                c.arg(k).arg(v);
            }
        }
        let ids: Vec<String> = p
            .query(&mut self.con)
            .map_err(redis_err(&self.broker, "XADD"))?;
        for id in &ids {
            self.audit.line(id);
        }
        self.audit.flush();
        Ok(true)
    }
}

/// Options of an `armac-actor` process.
#[derive(Clone, Debug)]
pub struct ActorOptions {
    pub run: String,
    pub broker: String,
    pub threads: usize,
    /// Seed of the actors' random streams (default: from the clock and process id).
    pub seed: Option<u64>,
}

/// What an `armac-actor` process did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActorReport {
    pub totals: ActorTotals,
    pub full_waits: u64,
}

/// Runs `opts.threads` actors against run `opts.run` until its learner says it is done.
/// Errors (before any thread starts) name the broker or the run id.
pub fn run_actors(opts: &ActorOptions) -> Result<ActorReport, ClusterError> {
    let mut con = connect(&opts.broker)?;
    let broker = redact_url(&opts.broker);
    let keys = Keys::new(&opts.run);
    let text: Option<String> = ::redis::cmd("GET")
        .arg(keys.config())
        .query(&mut con)
        .map_err(redis_err(&broker, "GET config"))?;
    let text = text.ok_or_else(|| {
        ClusterError::Usage(format!(
            "broker {broker}: run `{}` does not exist (no key {}); start its learner with \
             `armac-train --role learner` first, or check --run",
            opts.run,
            keys.config()
        ))
    })?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        ClusterError::Usage(format!(
            "broker {broker}: config of run `{}`: {e}",
            opts.run
        ))
    })?;
    let config =
        crate::run::config::Config::from_table(table, &format!("{} on {broker}", keys.config()))?;
    let s = config.armac()?;
    let game = load_game(&s.game)
        .map_err(|e| ClusterError::Usage(format!("game of run `{}`: {e}", opts.run)))?;
    let net_cfg = crate::run::armac::net_config(&game, &s);
    let settings = actor_settings(&game, &s);
    let cap = config
        .cluster
        .as_ref()
        .map(|c| c.stream_cap)
        .unwrap_or(usize::MAX);
    let seed = opts.seed.unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ ((std::process::id() as u64) << 32)
    });
    let mut handles = Vec::new();
    for a in 0..opts.threads.max(1) {
        let con = connect(&opts.broker)?;
        let (game, settings, keys, net_cfg, broker) = (
            game.clone(),
            settings.clone(),
            keys.clone(),
            net_cfg.clone(),
            broker.clone(),
        );
        let mut rng = SplitMix64::new(SplitMix64::new(seed ^ (a as u64 + 1)).next_u64());
        handles.push(std::thread::spawn(
            move || -> Result<ActorReport, ClusterError> {
                let mut link = RemoteActor {
                    con,
                    broker,
                    keys,
                    info_len: net_cfg.input_size,
                    num_actions: net_cfg.num_actions,
                    net_cfg,
                    cap,
                    nets: HashMap::new(),
                    current: None,
                    audit: Audit::open("actor"),
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

//! The learner's end of the Redis transport ([`RedisLearner`]).

use super::super::ClusterError;
use super::super::EpochPlan;
use super::super::LearnerLink;
use super::super::LearnerSettings;
use super::GROUP;
use super::Keys;
use super::Published;
use super::broker::Broker;
use super::broker::run_err;
use super::content_id;
use super::wire::Audit;
use super::wire::Fields;
use super::wire::Origin;
use super::wire::decode_msg;
use super::wire::is_copy;
use super::wire::parse_id;
use super::wire::read_entries;
use crate::rl::TrainError;
use crate::rl::armac::actor::ActorMsg;
use crate::util::FileSum;
use ::redis::Value;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

/// One entry read from the stream, not yet handed to the training loop.
pub(super) struct Read {
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

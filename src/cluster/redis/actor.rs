//! The actors' end of the Redis transport: [`RemoteActor`] and the `armac-actor` process ([`run_actors`]).

use super::super::ActorLink;
use super::super::ActorTotals;
use super::super::ClusterError;
use super::super::Next;
use super::super::actor_loop;
use super::super::actor_settings;
use super::Keys;
use super::Published;
use super::broker::Broker;
use super::content_id;
use super::wire::Audit;
use super::wire::encode_msg;
use crate::games::load_game;
use crate::nn::armac::ArmacPolicyNet;
use crate::rl::armac::ArmacRun;
use crate::rl::armac::actor::ActorMsg;
use crate::rl::armac::actor::PastEpoch;
use crate::rl::armac::actor::Snapshots;
use crate::rl::armac::net_config;
use crate::util::FileSum;
use crate::util::SplitMix64;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

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
    pub settings: ArmacRun,
    pub cluster: Option<crate::cluster::ClusterConfig>,
}

/// Reads the config a learner published (parsed TOML; the second argument names where it came
/// from, for errors). The config layer supplies it: `armac-actor` passes
/// `run::armac::actor_config`.
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
pub(super) fn host_name() -> String {
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
            .map_or(crate::cluster::DEFAULT_RECONNECT_SECS, |c| c.reconnect_secs)
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

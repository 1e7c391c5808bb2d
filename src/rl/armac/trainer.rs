//! [`ArmacTrainer`]: the learner's side of an ARMAC run, one epoch at a time. The caller (the
//! run layer) owns the run directory's generations, the metrics files and the schedule: it
//! opens a trainer ([`ArmacTrainer::open`]: a new run's `θ^0` or a committed checkpoint),
//! attaches the actors, then per epoch calls [`ArmacTrainer::act_and_learn`],
//! [`ArmacTrainer::advance`] and [`ArmacTrainer::log_epoch`], and writes the generation
//! [`ArmacTrainer::checkpoint`] describes, telling the trainer once it is committed
//! ([`ArmacTrainer::committed`]).

mod diagnose;

use super::checkpoint::{Checkpoint, contents};
use super::choices::Schedule;
use super::diagnostics::{DIAGNOSTICS_FILE, Diagnostics, DiagnosticsRow};
use super::exact::{Exact, ExactAdvantages, TabularW};
use super::learn::{EpochBody, EpochWork, act_and_learn, act_and_learn_lockstep, epoch_plan};
use super::lockstep::{LockstepActors, Stream, stream_seed};
use super::memory_io::new_memory;
use super::residency::{
    ResidentStats, collect_reservoir, load_resident, needed_snapshots, network_bytes, past_epochs,
    previous_epoch, save_net, working_set_capacity,
};
use super::settings::{ArmacRun, net_config, reward_scale};
use super::start::{ResumePoint, Start, fresh_state, resume_state};
use super::state::{ArmacState, Nets, Sums};
use super::transport::{
    EpochPlan, LearnerLink, LocalActor, LocalLearner, actor_loop, actor_settings,
};
use crate::eval::nash_conv;
use crate::game::GameRef;
use crate::games::load_game;
use crate::nn::armac::{ArmacLearner, ArmacNetConfig, ArmacPolicyNet};
use crate::rl::armac::actor::{ActorMsg, Snapshots};
use crate::rl::armac::memory::{Memory, MemoryKind};
use crate::rl::armac::replay::Replay;
use crate::rl::error::{TrainError, io_err};
use crate::tree::TreePolicy;
use crate::util::SplitMix64;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// Where a trainer writes its per-epoch scalars (TensorBoard in the run layer).
pub trait ScalarSink {
    fn scalar(&mut self, tag: &str, value: f64, step: u64);
}

/// The actor threads and the channel they report on.
type ActorHandles = (
    Vec<std::thread::JoinHandle<()>>,
    crossbeam::channel::Receiver<ActorMsg>,
);

/// What one epoch's evaluation found: the mean losses, the NashConv of the average and the
/// current policy (`None` when the epoch was not evaluated) and the exact diagnostics' row.
pub struct EpochReport {
    /// The epoch count after the epoch (the step its scalars are logged at).
    pub step: u64,
    pub losses: [f64; 4],
    pub nash_conv: Option<(f64, f64)>,
    pub diagnostics: DiagnosticsRow,
}

/// The learner of an ARMAC run with everything it holds between epochs.
pub struct ArmacTrainer {
    s: ArmacRun,
    game: GameRef,
    na: usize,
    net_cfg: ArmacNetConfig,
    dir: PathBuf,
    learner: ArmacLearner,
    state: ArmacState,
    /// The networks in memory, by epoch.
    nets: Nets,
    /// The recorded sums of the reservoir's network files.
    sums: Sums,
    replay: Replay,
    memory: Option<Memory>,
    ws_capacity: usize,
    ws_refresh: usize,
    exact: Option<Exact>,
    tabular: Option<TabularW>,
    diag: Option<Diagnostics>,
    exact_adv: Option<ExactAdvantages>,
    /// The networks the last checkpoint referenced (kept on disk once it is committed).
    referenced: BTreeSet<u64>,
    stop: Arc<AtomicBool>,
    quota: Arc<AtomicI64>,
    snapshots: Arc<RwLock<Arc<Snapshots>>>,
    link: Option<Box<dyn LearnerLink>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    /// `armac.schedule = "lockstep"`: the actors the learner hands each wave of groups to
    /// (instead of a link).
    lockstep: Option<LockstepActors>,
    /// The run's seed (the lock-step schedule derives every random stream from it).
    seed: u64,
    rng: SplitMix64,
    acting_t0: Instant,
    acting_before: u64,
    actors_t: Instant,
}

impl ArmacTrainer {
    /// The trainer of the ARMAC run `s` in `dir`: resumed from `resume` (which it only reads),
    /// or a new run whose `θ^0` is drawn from `seed` and written to the reservoir. Past
    /// networks in memory: as many epochs as `armac.snapshot_memory_mb` holds. No actors yet.
    pub fn open(
        dir: &Path,
        s: &ArmacRun,
        seed: u64,
        resume: Option<ResumePoint<'_>>,
    ) -> Result<ArmacTrainer, TrainError> {
        let game = load_game(&s.game)?;
        let device = crate::nn::select_device(s.device.as_str())
            .map_err(TrainError::context("armac.device"))?;
        let net_cfg = net_config(&game, s);
        let ws_capacity = working_set_capacity(s.snapshot_memory_mb, network_bytes(&net_cfg)?);
        let start = match resume {
            Some(r) => resume_state(
                dir,
                r.ckpt_dir,
                r.step,
                r.shared,
                &game,
                &net_cfg,
                &device,
                s,
                ws_capacity,
            )?,
            None => {
                let (learner, state, nets) = fresh_state(dir, &game, &net_cfg, &device, s, seed)?;
                let memory = (s.memory == MemoryKind::Reservoir).then(|| new_memory(s));
                Start {
                    learner,
                    state,
                    nets,
                    replay_items: Vec::new(),
                    sums: Default::default(),
                    memory,
                    diagnostics: None,
                }
            }
        };
        ArmacTrainer::new(dir, game, s, net_cfg, ws_capacity, start, seed)
    }
}

impl ArmacTrainer {
    /// A trainer for the run in `dir` (seeded with `seed`) from `start`, with the exact
    /// evaluator, the ablations' tables and the diagnostics its settings ask for;
    /// `ws_capacity` past epochs fit in memory. No actors yet (see
    /// [`ArmacTrainer::spawn_local_actors`] and [`ArmacTrainer::attach`]).
    fn new(
        dir: &Path,
        game: GameRef,
        s: &ArmacRun,
        net_cfg: ArmacNetConfig,
        ws_capacity: usize,
        start: Start,
        seed: u64,
    ) -> Result<ArmacTrainer, TrainError> {
        let na = game.num_distinct_actions();
        let Start {
            mut learner,
            state: st,
            nets,
            replay_items,
            sums,
            mut memory,
            diagnostics: saved_diagnostics,
        } = start;
        if let Some(m) = memory
            .as_mut()
            .filter(|m| s.device_memory.on_device(s.device.as_str(), m))
        {
            // The device copy starts empty: the first step uploads every row held.
            learner
                .enable_resident_memory(m.regret.capacity())
                .map_err(|e| TrainError::Usage(format!("armac.device_memory: {e}")))?;
            m.track_changes();
        }
        let exact = if s.exact_eval {
            Exact::new(&game, s.recurrent)?
        } else {
            None
        };
        let tabular = match (&exact, s.tabular_w, &memory) {
            (_, false, _) => None,
            (Some(ex), true, Some(m)) => {
                let mut t = TabularW::default();
                t.advance(ex, m, st.epoch, na);
                // A resumed run has lost the previous epoch's table: the latest stands in for it.
                if let Some(j) = st.epoch.checked_sub(1) {
                    let latest = t.policies[&st.epoch].clone();
                    t.policies.insert(j, latest);
                }
                Some(t)
            }
            _ => {
                return Err(TrainError::Usage(format!(
                    "armac.tabular_w: game {} is too large for exact evaluation",
                    s.game
                )));
            }
        };
        // Exact diagnostics continue the accumulators of the checkpoint a run resumes from; a
        // run without them (new, or resumed from a checkpoint written without diagnostics)
        // starts them at the network it starts with.
        // The exact sums weigh epochs as the reservoir memory weighs their samples (the replay
        // memory weighs every epoch the same).
        let powers = match s.memory {
            MemoryKind::Reservoir => [s.memory_regret_power, s.memory_policy_power],
            MemoryKind::Replay => [0.0, 0.0],
        };
        let diag = match (&exact, s.diagnostics) {
            (_, false) => None,
            (None, true) => {
                return Err(TrainError::Usage(format!(
                    "armac.diagnostics: game {} is too large for exact evaluation",
                    s.game
                )));
            }
            (Some(ex), true) => match saved_diagnostics {
                Some(bytes) => Some(
                    Diagnostics::decode(ex.histories(&game)?, &ex.tree, powers, &bytes).map_err(
                        |e| {
                            TrainError::Usage(format!(
                                "the checkpoint's {DIAGNOSTICS_FILE} is unusable: {e}"
                            ))
                        },
                    )?,
                ),
                None => {
                    if st.epoch > 0 {
                        eprintln!(
                            "note: the checkpoint has no {DIAGNOSTICS_FILE}; armac.diagnostics \
                             covers the policies from epoch {} on",
                            st.epoch
                        );
                    }
                    let mut d = Diagnostics::new(ex.histories(&game)?, &ex.tree, powers);
                    let pi =
                        current_policy(ex, tabular.as_ref(), &learner.snapshot(), st.epoch, na);
                    d.record(&ex.tree, &pi);
                    Some(d)
                }
            },
        };
        let exact_adv = match (&exact, s.exact_advantages) {
            (_, false) => None,
            (None, true) => {
                return Err(TrainError::Usage(format!(
                    "armac.exact_advantages: game {} is too large for exact evaluation",
                    s.game
                )));
            }
            (Some(ex), true) => {
                let mut e = ExactAdvantages {
                    ht: ex.histories(&game)?,
                    values: Default::default(),
                    scale: reward_scale(&game, s),
                    target: s.advantage_target,
                };
                e.refresh(ex, &st, &nets, tabular.as_ref(), na);
                Some(e)
            }
        };
        // Shared state with the actors.
        let stop = Arc::new(AtomicBool::new(false));
        // Episodes the actors may still start in this epoch (the learner refills it every
        // epoch), so that acting does not starve the learner of CPU.
        let quota = Arc::new(AtomicI64::new(s.episodes_per_epoch as i64));
        let snapshots = Arc::new(RwLock::new(Arc::new(Snapshots {
            epoch: st.epoch,
            latest: nets[&st.epoch].clone(),
            latest_table: tabular.as_ref().and_then(|t| t.table(st.epoch)),
            past: past_epochs(&st, &nets, exact_adv.as_ref(), tabular.as_ref()),
            previous: previous_epoch(&st, &nets, exact_adv.as_ref(), tabular.as_ref()),
            best: st.best,
        })));
        let mut replay = Replay {
            items: std::collections::VecDeque::with_capacity(s.replay_capacity.min(1 << 16)),
            capacity: s.replay_capacity,
            info_len: net_cfg.input_size,
            num_actions: na,
        };
        for t in replay_items {
            replay.push(t);
        }
        let rng = SplitMix64::new(st.rng);
        let acting_before = st.acting_steps;
        Ok(ArmacTrainer {
            s: s.clone(),
            game,
            na,
            net_cfg,
            dir: dir.to_path_buf(),
            learner,
            state: st,
            nets,
            sums,
            replay,
            memory,
            ws_capacity,
            ws_refresh: ws_capacity.div_ceil(16),
            exact,
            tabular,
            diag,
            exact_adv,
            referenced: BTreeSet::new(),
            stop,
            quota,
            snapshots,
            link: None,
            handles: Vec::new(),
            lockstep: None,
            seed,
            rng,
            acting_t0: Instant::now(),
            acting_before,
            actors_t: Instant::now(),
        })
    }

    /// The actors in this process: with the concurrent schedule `armac.actors` actor threads
    /// (actor `a` seeded with `seed_base + a + 1`), attached; with the lock-step schedule the
    /// actors the learner hands its waves of groups to (their streams come from the run's
    /// seed, not from `seed_base`).
    pub fn spawn_local_actors(&mut self, seed_base: u64) -> Result<(), TrainError> {
        if self.s.schedule == Schedule::Lockstep {
            let settings = actor_settings(&self.game, &self.s);
            let actors = LockstepActors::new(self.game.clone(), settings, self.seed, self.s.actors);
            self.lockstep = Some(actors);
            return Ok(());
        }
        let (handles, rx) = spawn_actors(
            &self.game,
            &self.s,
            seed_base,
            &self.snapshots,
            &self.stop,
            &self.quota,
            &self.dir,
        )?;
        let link = LocalLearner {
            rx: Some(rx),
            quota: self.quota.clone(),
        };
        self.attach(Box::new(link), handles);
        Ok(())
    }

    /// The actors' link (and the threads behind it, joined at [`ArmacTrainer::shutdown`]).
    pub fn attach(
        &mut self,
        link: Box<dyn LearnerLink>,
        handles: Vec<std::thread::JoinHandle<()>>,
    ) {
        self.link = Some(link);
        self.handles = handles;
    }

    /// The current epoch's networks by snapshot id (what a broker publishes).
    pub fn epoch_plan(&self) -> EpochPlan {
        epoch_plan(&self.state)
    }

    /// Acting and learning of the current epoch (see `act_and_learn` and
    /// `act_and_learn_lockstep`), with the seconds it took. `halt` is asked between learning
    /// steps and between actor messages or groups; once it says `true` the epoch is abandoned
    /// and `None` returned: the trainer then holds a partial epoch, which must not be
    /// checkpointed (the run resumes from its last committed checkpoint).
    pub fn act_and_learn(
        &mut self,
        halt: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<(EpochWork, f64)>, TrainError> {
        let epoch = self.state.epoch;
        let snaps = self.snapshots.read().expect("snapshot lock").clone();
        self.learner.set_lr(self.s.learning_rate_at(epoch));
        self.learner.set_loss_weights(self.s.loss_weights);
        let learn_t0 = Instant::now();
        if self.lockstep.is_some() {
            // The learner's stream of this epoch (it also serves the epoch's end, `advance`).
            self.rng = SplitMix64::new(stream_seed(self.seed, Stream::Learner, epoch, 0));
        }
        let body = EpochBody {
            s: &self.s,
            epoch,
            snaps: &snaps,
            learner: &mut self.learner,
            replay: &mut self.replay,
            memory: self.memory.as_mut(),
            st: &mut self.state,
            rng: &mut self.rng,
            na: self.na,
            halt,
        };
        let work = match (&self.lockstep, self.link.as_deref_mut()) {
            (Some(actors), _) => {
                act_and_learn_lockstep(body, &mut |first, n| actors.play(&snaps, first, n, halt))?
            }
            (None, Some(link)) => act_and_learn(body, link)?,
            (None, None) => panic!("the trainer's actors are attached"),
        };
        Ok(work.map(|w| (w, learn_t0.elapsed().as_secs_f64())))
    }

    /// The end of epoch `t`: `θ^{t+1}` is saved; past epoch `t = (θ^t, θ^{t+1})` joins the
    /// reservoir (reservoir sampling); candidates are ranked by `work`'s returns; the next
    /// epoch's networks are published and its quota opened.
    pub fn advance(&mut self, work: &EpochWork) -> Result<ResidentStats, TrainError> {
        let s = &self.s;
        let st = &mut self.state;
        let finished = st.epoch;
        st.epoch += 1;
        let net = Arc::new(self.learner.snapshot().rounded(s.snapshot_precision));
        self.sums.insert(
            st.epoch,
            save_net(&self.dir, st.epoch, &net, s.snapshot_precision)?,
        );
        self.nets.insert(st.epoch, net.clone());
        st.reservoir.push(finished, &mut self.rng);
        let items = st.reservoir.items().to_vec();
        st.working_set
            .update(&items, self.ws_capacity, self.ws_refresh, &mut self.rng);
        // Networks outside the working set leave memory now (evicted ones leave the disk after
        // the next checkpoint commits: the committed one may still reference them); incoming
        // members are read from disk.
        let resident = load_resident(&self.dir, st, &self.net_cfg, &mut self.nets, &self.sums)?;
        // Candidate ranking: this epoch's evaluations alone.
        st.candidate_stats.reset();
        st.candidate_stats.merge(&work.stats);
        if let Some(best) = st.candidate_stats.best() {
            st.best = best;
        }
        if let (Some(t), Some(ex), Some(m)) = (&mut self.tabular, &self.exact, &self.memory) {
            t.advance(ex, m, st.epoch, self.na);
        }
        if let (Some(e), Some(ex)) = (&mut self.exact_adv, &self.exact) {
            e.refresh(ex, st, &self.nets, self.tabular.as_ref(), self.na);
        }
        let (nets, tabular, exact_adv) =
            (&self.nets, self.tabular.as_ref(), self.exact_adv.as_ref());
        *self.snapshots.write().expect("snapshot lock") = Arc::new(Snapshots {
            epoch: st.epoch,
            latest: net.clone(),
            latest_table: tabular.and_then(|t| t.table(st.epoch)),
            past: past_epochs(st, nets, exact_adv, tabular),
            previous: previous_epoch(st, nets, exact_adv, tabular),
            best: st.best,
        });
        let plan = epoch_plan(&self.state);
        let episodes = self.s.episodes_per_epoch as i64;
        if let Some(link) = self.link.as_deref_mut() {
            link.begin_epoch(&plan, episodes)?;
        }
        Ok(resident)
    }

    /// The scalars of the epoch [`ArmacTrainer::advance`] just closed (`work`, `learn_secs` of
    /// acting and learning, `resident`: the networks it read), its exact diagnostics and, every
    /// `armac.eval_every` epochs and at the last, its exact NashConv.
    pub fn log_epoch(
        &mut self,
        work: &EpochWork,
        learn_secs: f64,
        resident: &ResidentStats,
        tb: &mut dyn ScalarSink,
    ) -> Result<EpochReport, TrainError> {
        let n = work.steps_done.max(1) as f64;
        let losses = work.losses_sum.map(|x| x / n);
        let it = self.state.epoch;
        self.log_counters(work, learn_secs, resident, &losses, tb);
        // `%`: a zero `eval_every` stays the error it is in the rest of the schedule.
        #[allow(clippy::manual_is_multiple_of)]
        let eval_now = it % self.s.eval_every == 0 || it == self.s.epochs;
        let net = self.nets[&it].clone();
        let diagnostics = self.diagnose(&net, eval_now, tb)?;
        let mut nash_conv_pair = None;
        if let Some(ex) = &self.exact
            && eval_now
        {
            let mut nc = ex.evaluate(&net, self.na);
            if let Some(pi) = self.tabular.as_ref().and_then(|t| t.policy(it)) {
                nc.1 = nash_conv(&ex.tree, pi).nash_conv;
            }
            tb.scalar("nash_conv", nc.0, it);
            tb.scalar("nash_conv_current", nc.1, it);
            nash_conv_pair = Some(nc);
        }
        Ok(EpochReport {
            step: it,
            losses,
            nash_conv: nash_conv_pair,
            diagnostics,
        })
    }

    /// Losses, reservoir, memory and throughput scalars of the epoch that just ended.
    fn log_counters(
        &mut self,
        work: &EpochWork,
        learn_secs: f64,
        resident: &ResidentStats,
        losses: &[f64; 4],
        tb: &mut dyn ScalarSink,
    ) {
        let st = &self.state;
        let it = st.epoch;
        tb.scalar("loss/critic", losses[0], it);
        tb.scalar("loss/mean_regret", losses[1], it);
        tb.scalar("loss/immediate_regret", losses[2], it);
        tb.scalar("loss/policy", losses[3], it);
        // Per learning step, means over the epoch.
        let steps = work.steps_done.max(1) as f64;
        tb.scalar(
            "learner/upload_bytes",
            work.io.upload_bytes as f64 / steps,
            it,
        );
        tb.scalar("learner/uploads", work.io.uploads as f64 / steps, it);
        tb.scalar("learner/readbacks", work.io.readbacks as f64 / steps, it);
        tb.scalar("learner/ops", work.io.ops as f64 / steps, it);
        tb.scalar("epoch", it as f64, it);
        tb.scalar("reservoir_size", st.reservoir.len() as f64, it);
        tb.scalar(
            "reservoir/working_set",
            st.working_set.epochs().len() as f64,
            it,
        );
        tb.scalar("reservoir/networks_in_memory", self.nets.len() as f64, it);
        tb.scalar(
            "reservoir/hit_rate",
            resident.hits as f64 / (resident.hits + resident.loads).max(1) as f64,
            it,
        );
        tb.scalar("reservoir/loads", resident.loads as f64, it);
        tb.scalar("reservoir/load_seconds", resident.load_seconds, it);
        if let Some(m) = &self.memory {
            tb.scalar("memory/regret_samples", m.regret.len() as f64, it);
            tb.scalar("memory/policy_samples", m.policy.len() as f64, it);
            if let Some([r, p]) = m.distinct_states() {
                tb.scalar("memory/regret_states", r as f64, it);
                tb.scalar("memory/policy_states", p as f64, it);
            }
        }
        if let Some(mb) = crate::util::resident_memory_mb() {
            tb.scalar("memory/rss_mb", mb, it);
        }
        tb.scalar(
            "acting_steps_per_second",
            self.acting_steps_per_second(),
            it,
        );
        tb.scalar(
            "learning_steps_per_second",
            work.steps_done as f64 / learn_secs.max(1e-9),
            it,
        );
        tb.scalar("best_candidate", st.best.id() as f64, it);
        tb.scalar("budget/episodes", st.episodes as f64, it);
        tb.scalar(
            "budget/learning_decisions",
            st.learning_decisions as f64,
            it,
        );
        tb.scalar("budget/nodes_touched", st.nodes_touched as f64, it);
        tb.scalar("budget/learning_steps", st.learning_steps as f64, it);
        tb.scalar("budget/rows_learned", st.rows_learned as f64, it);
        let Some(link) = self.link.as_deref_mut() else {
            return;
        };
        if let Some(q) = link.queue_depth() {
            tb.scalar("broker/queue_depth", q as f64, it);
            // Remote actors by name: the acting steps of theirs this epoch took in, per
            // second of the epoch's wall time.
            let secs = self.actors_t.elapsed().as_secs_f64().max(1e-9);
            self.actors_t = Instant::now();
            let counts = link.actor_counts();
            let total: u64 = counts.iter().map(|c| c.1).sum();
            for (name, steps, _) in &counts {
                tb.scalar(
                    &format!("actors/{name}/acting_steps_per_second"),
                    *steps as f64 / secs,
                    it,
                );
            }
            tb.scalar("actors/acting_steps_per_second", total as f64 / secs, it);
            tb.scalar("actors/count", counts.len() as f64, it);
        }
    }

    /// Whether the link asks for a checkpoint now (a broker, to acknowledge what it read).
    pub fn wants_checkpoint(&mut self) -> bool {
        self.link.as_deref().is_some_and(|l| l.wants_checkpoint())
    }

    /// Fills in what a checkpoint records beside the counters: `seconds` of wall time and
    /// `cpu_seconds` of CPU time of training so far, the RNG state and the link's stream
    /// position.
    pub fn record(&mut self, seconds: f64, cpu_seconds: f64) {
        self.state.elapsed_seconds = seconds;
        self.state.cpu_seconds = cpu_seconds;
        self.state.rng = self.rng.clone().next_u64();
        if let Some(link) = self.link.as_deref() {
            self.state.broker_cursor = link.cursor();
            self.state.broker_seen = link.seen();
        }
    }

    /// A checkpoint holding [`ArmacTrainer::record`]'s position is committed.
    pub fn committed(&mut self) -> Result<(), TrainError> {
        let epoch = self.state.epoch;
        let referenced = &self.referenced;
        self.sums
            .retain(|id, _| referenced.contains(id) || *id > epoch);
        collect_reservoir(
            &self.dir,
            &referenced
                .iter()
                .copied()
                .chain(self.sums.keys().copied())
                .collect(),
        );
        match self.link.as_deref_mut() {
            Some(link) => link.committed(),
            None => Ok(()),
        }
    }

    /// What a checkpoint of the trainer's current state holds (call [`ArmacTrainer::record`]
    /// first); once the generation is committed, call [`ArmacTrainer::committed`].
    pub fn checkpoint(&mut self) -> Result<Checkpoint<'_>, TrainError> {
        let (files, snapshots, referenced) = contents(
            &self.dir,
            &self.state,
            &self.replay,
            self.memory.as_ref(),
            self.diag.as_ref(),
            &mut self.sums,
        )?;
        self.referenced = referenced;
        Ok(Checkpoint {
            epoch: self.state.epoch,
            learner: &self.learner,
            files,
            snapshots,
        })
    }

    /// Deletes the reservoir networks a resumed run's checkpoint does not reference (written
    /// after it; this run writes them again). Call once the run directory may change.
    pub fn drop_unreferenced_networks(&self) {
        collect_reservoir(&self.dir, &needed_snapshots(&self.state));
    }

    /// The game the run trains on.
    pub fn game(&self) -> &GameRef {
        &self.game
    }

    /// The counters, reservoirs and RNG state of the run.
    pub fn state(&self) -> &ArmacState {
        &self.state
    }

    /// The replay memory's information-state length and action count (what trajectories on
    /// the wire carry).
    pub fn replay_shape(&self) -> (usize, usize) {
        (self.replay.info_len, self.replay.num_actions)
    }

    /// Stops the actors: tells them, closes the link and joins the threads. The first error
    /// (the link's, then a panicked thread).
    pub fn shutdown(&mut self) -> Result<(), TrainError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut result = match self.link.as_deref_mut() {
            Some(link) => link.close(),
            None => Ok(()),
        };
        for h in std::mem::take(&mut self.handles) {
            if h.join().is_err() && result.is_ok() {
                result = Err(TrainError::Usage("an actor thread panicked".into()));
            }
        }
        result
    }

    /// Acting steps per second since this trainer was built.
    pub fn acting_steps_per_second(&self) -> f64 {
        (self.state.acting_steps - self.acting_before) as f64
            / self.acting_t0.elapsed().as_secs_f64().max(1e-9)
    }

    /// The exact NashConv of the average policy of the network the learner holds now
    /// (rounded like its snapshots); `None` without exact evaluation.
    pub fn final_nash_conv(&self) -> Option<f64> {
        let ex = self.exact.as_ref()?;
        Some(
            ex.evaluate(
                &self.learner.snapshot().rounded(self.s.snapshot_precision),
                self.na,
            )
            .0,
        )
    }
}

/// `π^t` as the actors play it: the table's policy (`tabular_w`) or regret matching on the
/// network's mean-regret head.
pub(super) fn current_policy(
    ex: &Exact,
    tab: Option<&TabularW>,
    net: &ArmacPolicyNet,
    epoch: u64,
    na: usize,
) -> TreePolicy {
    match tab.and_then(|t| t.policy(epoch)) {
        Some(p) => p.clone(),
        None => ex.policies(net, na).1,
    }
}

/// Starts `s.actors` actor threads (actor `a` seeded with `seed_base + a + 1`): each plays
/// lock-step groups against the published snapshots while the epoch's quota lasts and sends
/// trajectories and candidate returns to the returned channel.
pub(crate) fn spawn_actors(
    game: &GameRef,
    s: &ArmacRun,
    seed_base: u64,
    snapshots: &Arc<RwLock<Arc<Snapshots>>>,
    stop: &Arc<AtomicBool>,
    quota: &Arc<AtomicI64>,
    dir: &Path,
) -> Result<ActorHandles, TrainError> {
    let (tx, rx) = crossbeam::channel::bounded::<ActorMsg>(
        4 * s.games_per_group.max(1) * s.actors.max(1) + 64,
    );
    let actor_settings = actor_settings(game, s);
    let mut handles = Vec::new();
    for a in 0..s.actors {
        let (game, snapshots, stop, tx, settings, quota) = (
            game.clone(),
            snapshots.clone(),
            stop.clone(),
            tx.clone(),
            actor_settings.clone(),
            quota.clone(),
        );
        let seed = seed_base.wrapping_add(a as u64 + 1);
        handles.push(
            std::thread::Builder::new()
                .name(format!("actor-{a}"))
                .spawn(move || {
                    let mut rng = SplitMix64::new(seed);
                    let mut link = LocalActor {
                        snapshots,
                        stop,
                        quota,
                        tx,
                    };
                    // The in-process link cannot fail.
                    let _ = actor_loop(&mut link, &game, &settings, &mut rng);
                })
                .map_err(io_err("actor thread", dir))?,
        );
    }
    drop(tx);
    Ok((handles, rx))
}

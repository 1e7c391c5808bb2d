//! The threaded schedule of a SoG round (`actors ≥ 1`): actor and solver threads feed a
//! paced learner on the calling thread (see [`threaded_round`]).

use super::rounds::{
    RoundCtx, RoundOut, RoundStats, encoder, game_examples, round_seed, tally_game,
};
use crate::nn::cvpn::{Cvpn, CvpnLeaves, CvpnSnapshot};
use crate::rl::error::TrainError;
use crate::rl::sog::{ExampleReplay, QueryBuffer, play_games, value_examples};
use crate::search::{Pbs, solve_pbs_with_frontier};
use crate::util::SplitMix64;
use crossbeam::channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

/// The queries shared by actors and solvers in a threaded round.
struct SharedQueries {
    buffer: QueryBuffer,
    /// Random queries of the round, solved first and outside the quota.
    extra: Vec<Pbs>,
    /// Buffer queries claimed by solvers this round (quota `solves_per_round`).
    claimed: usize,
}

/// What a generator thread sends the learner.
struct Produced {
    examples: Vec<crate::rl::sog::Example>,
}

/// What the threads of a round share.
struct Round<'c, 'a> {
    ctx: &'c RoundCtx<'a>,
    base_seed: u64,
    shared: Mutex<SharedQueries>,
    snap: RwLock<Arc<CvpnSnapshot>>,
    learner_steps: AtomicU64,
    games_claimed: AtomicUsize,
    games_done: AtomicUsize,
    solved: AtomicUsize,
    actors_left: AtomicUsize,
    solvers_left: AtomicUsize,
    abort: AtomicBool,
    failure: Mutex<Option<TrainError>>,
    tally: Mutex<RoundStats>,
    /// When the last actor and the last solver finished, in seconds since `t0`.
    times: Mutex<[f64; 2]>,
    t0: Instant,
}

impl Round<'_, '_> {
    /// Records the round's first failure and stops every thread.
    fn fail(&self, e: TrainError) {
        self.abort.store(true, Ordering::Relaxed);
        self.failure.lock().expect("failure lock").get_or_insert(e);
    }

    /// Whether the round ends early: a thread failed, or a stop was asked ([`RoundCtx::stop`]).
    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed) || (self.ctx.stop)()
    }
}

/// One round with threads (`actors ≥ 1`): `actors` threads play the round's
/// `games_per_round` games and `solvers` threads re-solve up to `solves_per_round` queries
/// (oldest first, as they arrive, plus the round's random queries) while the calling thread
/// takes the round's `steps_per_round` learner steps. The learner is paced by the generators:
/// its `k`-th step waits until both the games played and the queries solved reach `k/K` of
/// their quotas (or the generators are done), so the per-round ratio of learner steps to
/// games and solves is that of the sequential schedule at every moment. It broadcasts its
/// weights ([`Cvpn::snapshot`], versioned by its step count) at the round's start and every
/// `sync_every` steps; each game and each solve takes the newest weights when it starts.
/// Game seeds depend on `(seed, round, game index)` only, but which weights a game or solve
/// sees, and the order in which queries and examples arrive, depend on thread timing: runs
/// with threads are not reproducible bit for bit. At the round's end every thread has
/// finished, so checkpoints hold a consistent state.
pub fn threaded_round(
    ctx: &RoundCtx,
    net: &mut Cvpn,
    queries: &mut QueryBuffer,
    replay: &mut ExampleReplay,
) -> Result<RoundOut, TrainError> {
    let s = ctx.s;
    let base_seed = round_seed(s.seed, ctx.round);
    let mut rng = SplitMix64::new(base_seed);
    let extra = {
        let enc = encoder(ctx.c)?;
        enc.random_queries(&mut rng, s.random_queries)
    };
    let r = Round {
        ctx,
        base_seed,
        shared: Mutex::new(SharedQueries {
            buffer: std::mem::take(queries),
            extra,
            claimed: 0,
        }),
        snap: RwLock::new(Arc::new(net.snapshot())),
        learner_steps: AtomicU64::new(net.steps()),
        games_claimed: AtomicUsize::new(0),
        games_done: AtomicUsize::new(0),
        solved: AtomicUsize::new(0),
        actors_left: AtomicUsize::new(s.actors),
        solvers_left: AtomicUsize::new(s.solvers),
        abort: AtomicBool::new(false),
        failure: Mutex::new(None),
        tally: Mutex::new(RoundStats::default()),
        times: Mutex::new([0.0f64; 2]),
        t0: Instant::now(),
    };
    let (tx, rx) = crossbeam::channel::unbounded::<Produced>();
    let mut learned = Learned::default();
    std::thread::scope(|scope| {
        let r = &r;
        for actor in 0..s.actors {
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("sog-actor-{actor}"))
                .spawn_scoped(scope, move || {
                    if let Err(e) = actor_loop(r, &tx) {
                        r.fail(e);
                    }
                    r.times.lock().expect("times lock")[0] = r.t0.elapsed().as_secs_f64();
                    r.actors_left.fetch_sub(1, Ordering::SeqCst);
                })
                .expect("spawning an actor thread");
        }
        for solver in 0..s.solvers {
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("sog-solver-{solver}"))
                .spawn_scoped(scope, move || {
                    if let Err(e) = solver_loop(r, solver, &tx) {
                        r.fail(e);
                    }
                    r.times.lock().expect("times lock")[1] = r.t0.elapsed().as_secs_f64();
                    r.solvers_left.fetch_sub(1, Ordering::SeqCst);
                })
                .expect("spawning a solver thread");
        }
        drop(tx);
        learned = learn(r, net, replay, &mut rng, &rx);
    });
    // Every generator has finished: collect what is left.
    while let Ok(m) = rx.try_recv() {
        for e in m.examples {
            replay.push(e);
        }
    }
    if let Some(e) = r.failure.into_inner().expect("failure lock") {
        return Err(e);
    }
    // Every thread has seen the stop (or finished): the round's state is part-updated.
    if (ctx.stop)() {
        return Err(TrainError::Stopped);
    }
    let sh = r.shared.into_inner().expect("query lock");
    *queries = sh.buffer;
    let mut rs = r.tally.into_inner().expect("tally lock");
    let steps = learned.steps;
    rs.value_loss = learned.value_loss / steps.max(1) as f64;
    rs.policy_loss = learned.policy_loss / steps.max(1) as f64;
    let [play_secs, solve_secs] = r.times.into_inner().expect("times lock");
    Ok(RoundOut {
        rs,
        steps,
        play_secs,
        solve_secs,
        learn_secs: learned.secs,
    })
}

/// An actor thread: plays groups of `search_batch` games, their searches in lock-step, until
/// the round's games are claimed.
fn actor_loop(r: &Round, tx: &Sender<Produced>) -> Result<(), TrainError> {
    let (ctx, s) = (r.ctx, r.ctx.s);
    let c = ctx.c;
    let mut enc = encoder(c)?;
    let mut ex_enc = encoder(c)?;
    loop {
        if r.aborted() {
            return Ok(());
        }
        let group = s.search_batch.max(1);
        let g0 = r.games_claimed.fetch_add(group, Ordering::SeqCst);
        if g0 >= s.games_per_round {
            return Ok(());
        }
        let gis = g0..(g0 + group).min(s.games_per_round);
        let weights = r.snap.read().expect("weights lock").clone();
        let lag = r
            .learner_steps
            .load(Ordering::Relaxed)
            .saturating_sub(weights.version);
        let seeds: Vec<u64> = gis
            .map(|gi| {
                SplitMix64::new(r.base_seed ^ (gi as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407))
                    .next_u64()
            })
            .collect();
        let mut leaves = CvpnLeaves::new(&*weights, &mut enc).with_zero_sum(s.zero_sum);
        let played = play_games(
            &c.tree,
            &c.ht,
            ctx.play_cfg,
            &seeds,
            &c.layouts,
            &mut leaves,
        )
        .map_err(TrainError::context(format!(
            "self-play in round {}",
            ctx.round
        )))?;
        for g in played {
            let (examples, n_td1) = game_examples(&mut ex_enc, &g, ctx.a, s.td1)?;
            {
                let mut t = r.tally.lock().expect("tally lock");
                tally_game(&mut t, &g);
                t.td1_examples += n_td1;
                t.weight_lag += lag;
            }
            {
                let mut sh = r.shared.lock().expect("query lock");
                for q in g.queries {
                    sh.buffer.push(q);
                }
            }
            let _ = tx.send(Produced { examples });
            r.games_done.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The next query of solver threads: the round's random queries first, then the buffer's
/// oldest within the quota. `Ok(None)`: none yet, try again; `Err(())`: the solver is done.
fn next_query(r: &Round) -> Result<Option<Pbs>, ()> {
    let mut sh = r.shared.lock().expect("query lock");
    if let Some(q) = sh.extra.pop() {
        Ok(Some(q))
    } else if sh.claimed >= r.ctx.s.solves_per_round {
        Err(())
    } else if let Some(q) = sh.buffer.items.pop_front() {
        sh.claimed += 1;
        Ok(Some(q))
    } else if r.actors_left.load(Ordering::SeqCst) == 0 {
        Err(())
    } else {
        Ok(None)
    }
}

/// A solver thread: re-solves queries with the newest weights until the quota is reached or
/// the actors are done and the buffer is empty.
fn solver_loop(r: &Round, solver: usize, tx: &Sender<Produced>) -> Result<(), TrainError> {
    let (ctx, s) = (r.ctx, r.ctx.s);
    let c = ctx.c;
    let mut enc = encoder(c)?;
    let mut ex_enc = encoder(c)?;
    let mut rng =
        SplitMix64::new(r.base_seed ^ (solver as u64 + 1).wrapping_mul(0x9FB2_1C65_1E98_DF25));
    loop {
        if r.aborted() {
            return Ok(());
        }
        let Ok(q) = next_query(r) else {
            return Ok(());
        };
        let Some(q) = q else {
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        };
        let weights = r.snap.read().expect("weights lock").clone();
        let mut leaves = CvpnLeaves::new(&*weights, &mut enc).with_zero_sum(s.zero_sum);
        let (v, frontier) =
            solve_pbs_with_frontier(&c.tree, &c.ht, &q, ctx.solver_cfg, &mut leaves).map_err(
                TrainError::context(format!("solving queries in round {}", ctx.round)),
            )?;
        let examples = value_examples(&mut ex_enc, &[q], &[v])
            .map_err(TrainError::context("encoding value targets"))?;
        let recursive: Vec<Pbs> = if s.p_rec > 0.0 {
            frontier
                .into_iter()
                .filter(|_| rng.next_f64() < s.p_rec)
                .collect()
        } else {
            Vec::new()
        };
        {
            let mut t = r.tally.lock().expect("tally lock");
            t.solved += 1;
            t.recursive += recursive.len() as u64;
        }
        if !recursive.is_empty() {
            let mut sh = r.shared.lock().expect("query lock");
            for q in recursive {
                sh.buffer.push(q);
            }
        }
        let _ = tx.send(Produced { examples });
        r.solved.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the learner of a threaded round did.
#[derive(Default)]
struct Learned {
    steps: usize,
    value_loss: f64,
    policy_loss: f64,
    secs: f64,
}

/// Moves the examples that have arrived into `replay`.
fn drain(rx: &Receiver<Produced>, replay: &mut ExampleReplay) {
    while let Ok(m) = rx.try_recv() {
        for e in m.examples {
            replay.push(e);
        }
    }
}

/// The learner, on the calling thread, paced by the generators (see [`threaded_round`]).
fn learn(
    r: &Round,
    net: &mut Cvpn,
    replay: &mut ExampleReplay,
    rng: &mut SplitMix64,
    rx: &Receiver<Produced>,
) -> Learned {
    let (ctx, s) = (r.ctx, r.ctx.s);
    let t_learn = Instant::now();
    let mut out = Learned::default();
    let k_total = s.steps_per_round;
    let (g_total, s_total) = (s.games_per_round.max(1), s.solves_per_round.max(1));
    for k in 1..=k_total {
        loop {
            drain(rx, replay);
            if r.aborted() {
                break;
            }
            let done = r.actors_left.load(Ordering::SeqCst) == 0
                && r.solvers_left.load(Ordering::SeqCst) == 0;
            let g_ok = r.games_done.load(Ordering::SeqCst) * k_total >= k * g_total;
            let s_ok = r.solvers_left.load(Ordering::SeqCst) == 0
                || r.solved.load(Ordering::SeqCst) * k_total >= k * s_total;
            if done || (g_ok && s_ok) {
                break;
            }
            if let Ok(m) = rx.recv_timeout(std::time::Duration::from_millis(2)) {
                for e in m.examples {
                    replay.push(e);
                }
            }
        }
        if r.aborted() {
            break;
        }
        let b = replay.sample(rng, s.batch, ctx.p, ctx.a);
        if b.input.is_empty() {
            break;
        }
        match net.train_step(&b) {
            Ok(l) => {
                out.value_loss += l.value;
                out.policy_loss += l.policy;
                out.steps += 1;
            }
            Err(e) => {
                r.fail(TrainError::context("a learner step")(e));
                break;
            }
        }
        r.learner_steps.store(net.steps(), Ordering::Relaxed);
        if out.steps.is_multiple_of(s.sync_every) {
            *r.snap.write().expect("weights lock") = Arc::new(net.snapshot());
        }
    }
    out.secs = t_learn.elapsed().as_secs_f64();
    out
}

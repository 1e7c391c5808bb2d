//! A persistent team of worker threads for the sampled solvers' parallel iterations
//! (`os-mccfr`, `es-mccfr`, … and `pos-mccfr` with `walks > 1`).
//!
//! [`Team::run`] hands one job to every member at once (the calling thread is member 0, the
//! team's own threads members `1..size`) and returns when all have finished it: one dispatch per
//! player-turn, in which the members run their walks, meet at [`Team::barrier`] and then apply
//! their shard of the logs. Waiting members (for the next job, at the barrier, the caller for
//! the end of a job) spin for a microsecond, then yield their core for a few hundred
//! microseconds — an iteration's dispatches follow each other closely, and yielding lets the
//! member being waited for (or another process) run on a busy machine — and then sleep on a
//! condition variable, so idle members burn no CPU.
//!
//! [`shard_of`] routes a table index to one of the members, so each member can apply the log
//! entries of its own indices without touching anyone else's.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a waiting member spins (busy, `pause`) before it yields.
const SPIN: Duration = Duration::from_micros(1);
/// How long it then yields its core (`sched_yield`: other runnable threads go first, so on a
/// busy machine the wait costs little CPU) before it sleeps. Measured on 2 shared cores (load
/// 7, Leduc, `walks = 128`): busy spinning for 50 µs before sleeping gave outcome sampling a
/// parallel efficiency of 0.20, sleeping at once 0.50, yielding for 100-300 µs 0.73-0.78.
const YIELD: Duration = Duration::from_micros(300);

/// The shard (in `0..shards`) of table index `key`: blocks of 16 consecutive indices (128
/// bytes of `f64`, so two shards rarely write one cache line) scattered over the shards by a
/// multiplicative hash (so the hot entries near the root spread out). Two multiplications, no
/// division; a function of `(key, shards)` only.
#[inline]
pub fn shard_of(key: usize, shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    let h = ((key >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    ((h * shards as u64) >> 32) as usize
}

/// One parallel player turn: `walk(c)` for every chunk `c` in `0..chunks` (on the team's
/// members when there is a team; chunk 0 on this thread otherwise), then `apply(s)` for every
/// shard `s`: by the members after a barrier with `parallel_apply`, else one after the other
/// on this thread once the walks are done.
pub(crate) fn walk_then_apply(
    team: Option<&Team>,
    chunks: usize,
    parallel_apply: bool,
    walk: &(dyn Fn(usize) + Sync),
    apply: &(dyn Fn(usize) + Sync),
) {
    match team {
        Some(team) => team.run(&|c: usize| {
            walk(c);
            // A member that panicked never arrives: then the others skip their apply (some
            // walks may still be reading the tables) and `Team::run` re-raises the panic.
            if parallel_apply && team.barrier() {
                apply(c);
            }
        }),
        None => walk(0),
    }
    if !parallel_apply || team.is_none() {
        (0..chunks).for_each(apply);
    }
}

/// Spin-then-sleep waiting on a condition that other threads make true.
#[derive(Default)]
struct Gate {
    lock: Mutex<()>,
    cv: Condvar,
    sleepers: AtomicUsize,
}

impl Gate {
    /// Returns once `ready()` holds (`ready` must read state written with `SeqCst`).
    fn wait_until(&self, ready: impl Fn() -> bool) {
        let (spin, yield_for) = (SPIN, YIELD);
        let start = Instant::now();
        let mut n = 0u32;
        while !ready() {
            n += 1;
            if n.is_multiple_of(16) && start.elapsed() >= spin {
                break;
            }
            std::hint::spin_loop();
        }
        loop {
            if ready() {
                return;
            }
            if start.elapsed() >= spin + yield_for {
                break;
            }
            std::thread::yield_now();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, SeqCst);
        while !ready() {
            guard = self.cv.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        self.sleepers.fetch_sub(1, SeqCst);
    }

    /// Wakes the sleepers after the state `ready` reads has changed (with `SeqCst`). A waiter
    /// either counts itself a sleeper before this reads the count (and then sleeps under the
    /// lock, which this takes before notifying) or checks `ready` after the change.
    fn notify(&self) {
        if self.sleepers.load(SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_all();
        }
    }
}

/// A job with its lifetime erased: `call(data, member)`.
#[derive(Clone, Copy)]
struct JobRef {
    data: *const (),
    call: unsafe fn(*const (), usize),
}

unsafe fn call_job<F: Fn(usize) + Sync>(data: *const (), member: usize) {
    // SAFETY: `data` is the `&F` that `Team::run` stored, alive until every member is done.
    unsafe { (*(data as *const F))(member) }
}

struct Shared {
    size: usize,
    /// Jobs dispatched so far; a member runs the job when this moves past the last it saw.
    epoch: AtomicU64,
    /// The current job, written by `run` before it bumps `epoch`.
    job: UnsafeCell<Option<JobRef>>,
    /// Members `1..size` that have not finished the current job.
    pending: AtomicUsize,
    /// A member's job panicked (the barrier stops waiting, `run` re-raises).
    panicked: AtomicBool,
    shutdown: AtomicBool,
    /// Barrier: members arrived, and the generation bumped by the last to arrive.
    arrived: AtomicUsize,
    generation: AtomicU64,
    work: Gate,
    done: Gate,
    meet: Gate,
}

// SAFETY: `job` is written only by the thread in `Team::run` while no member reads it (before
// `epoch` is bumped, after `pending` reached 0); members read it after seeing the new `epoch`.
// `JobRef` points at a `Sync` closure.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// A fixed set of `size` members (the calling thread and `size - 1` threads).
pub struct Team {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Team {
    /// A team of `size ≥ 1` members (spawns `size - 1` threads named `armac-walk-{i}`).
    pub fn new(size: usize) -> Team {
        let size = size.max(1);
        let shared = Arc::new(Shared {
            size,
            epoch: AtomicU64::new(0),
            job: UnsafeCell::new(None),
            pending: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            arrived: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            work: Gate::default(),
            done: Gate::default(),
            meet: Gate::default(),
        });
        let threads = (1..size)
            .map(|member| {
                let s = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("armac-walk-{member}"))
                    .spawn(move || member_loop(&s, member))
                    .expect("spawn a worker thread")
            })
            .collect();
        Team { shared, threads }
    }

    /// Members, the calling thread included.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Runs `job(member)` on every member at once (member 0 on this thread) and returns when
    /// all are done. A panic in any member is re-raised here.
    pub fn run<F: Fn(usize) + Sync>(&self, job: &F) {
        let s = &*self.shared;
        if s.size == 1 {
            job(0);
            return;
        }
        // SAFETY: no member reads `job` now (the previous job's members all finished).
        unsafe {
            *s.job.get() = Some(JobRef {
                data: job as *const F as *const (),
                call: call_job::<F>,
            });
        }
        s.pending.store(s.size - 1, SeqCst);
        s.epoch.fetch_add(1, SeqCst);
        s.work.notify();
        let mine = catch_unwind(AssertUnwindSafe(|| job(0)));
        if mine.is_err() {
            s.panicked.store(true, SeqCst);
            s.meet.notify();
        }
        s.done.wait_until(|| s.pending.load(SeqCst) == 0);
        // Every member is done with `job`: forget it before it goes out of scope.
        unsafe { *s.job.get() = None };
        let panicked = s.panicked.swap(false, SeqCst);
        if panicked {
            s.arrived.store(0, SeqCst);
        }
        match mine {
            Err(e) => resume_unwind(e),
            Ok(()) if panicked => panic!("a worker thread of the sampled solver panicked"),
            Ok(()) => {}
        }
    }

    /// Inside a [`Team::run`] job: waits until every member has reached this call. Returns
    /// whether they all did (false: it stopped waiting because a member's job panicked).
    pub fn barrier(&self) -> bool {
        let s = &*self.shared;
        if s.size == 1 {
            return true;
        }
        let generation = s.generation.load(SeqCst);
        if s.arrived.fetch_add(1, SeqCst) + 1 == s.size {
            s.arrived.store(0, SeqCst);
            s.generation.fetch_add(1, SeqCst);
            s.meet.notify();
            true
        } else {
            s.meet
                .wait_until(|| s.generation.load(SeqCst) != generation || s.panicked.load(SeqCst));
            s.generation.load(SeqCst) != generation
        }
    }
}

fn member_loop(s: &Shared, member: usize) {
    let mut seen = 0u64;
    loop {
        s.work
            .wait_until(|| s.epoch.load(SeqCst) != seen || s.shutdown.load(SeqCst));
        if s.shutdown.load(SeqCst) {
            return;
        }
        seen = s.epoch.load(SeqCst);
        // SAFETY: `run` wrote the job before bumping `epoch` and keeps it until `pending` is 0.
        let job = unsafe { (*s.job.get()).expect("a job") };
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { (job.call)(job.data, member) }));
        if r.is_err() {
            s.panicked.store(true, SeqCst);
            s.meet.notify();
        }
        if s.pending.fetch_sub(1, SeqCst) == 1 {
            s.done.notify();
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, SeqCst);
        self.shared.work.notify();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_member_runs_each_job_and_the_barrier_separates_phases() {
        for size in [1, 2, 3, 5] {
            let team = Team::new(size);
            let slots: Vec<AtomicU64> = (0..size).map(|_| AtomicU64::new(0)).collect();
            let seen: Vec<AtomicU64> = (0..size).map(|_| AtomicU64::new(0)).collect();
            for round in 1..=200u64 {
                team.run(&|m: usize| {
                    slots[m].store(round * 10 + m as u64, SeqCst);
                    team.barrier();
                    // After the barrier every member's phase-1 write is visible.
                    let sum: u64 = slots.iter().map(|x| x.load(SeqCst)).sum();
                    seen[m].store(sum, SeqCst);
                });
                let want: u64 = (0..size as u64).map(|m| round * 10 + m).sum();
                for s in &seen {
                    assert_eq!(s.load(SeqCst), want, "size {size} round {round}");
                }
            }
        }
    }

    #[test]
    fn a_panicking_member_is_reported_and_the_team_stays_usable() {
        let team = Team::new(3);
        let r = catch_unwind(AssertUnwindSafe(|| {
            team.run(&|m: usize| {
                if m == 2 {
                    panic!("member 2 fails");
                }
                team.barrier();
            })
        }));
        assert!(r.is_err());
        let count = AtomicU64::new(0);
        team.run(&|_| {
            count.fetch_add(1, SeqCst);
            team.barrier();
        });
        assert_eq!(count.load(SeqCst), 3);
    }

    #[test]
    fn shards_cover_every_index_and_keep_blocks_together() {
        for shards in [1, 2, 3, 7, 64] {
            let mut hits = vec![0usize; shards];
            for key in 0..100_000 {
                let s = shard_of(key, shards);
                assert!(s < shards);
                assert_eq!(s, shard_of(key & !15, shards));
                hits[s] += 1;
            }
            // Every shard gets work (the hash spreads the blocks).
            assert!(hits.iter().all(|&h| h > 0), "{shards}: {hits:?}");
        }
    }
}

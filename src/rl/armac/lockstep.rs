//! The actors of `armac.schedule = "lockstep"`: no threads between epochs, no shared quota.
//! The learner asks for a wave of groups; [`LockstepActors::play`] plays them on up to
//! `armac.actors` scoped threads, each group with its own random stream derived from the run's
//! seed, the epoch and the group's index, and returns their messages in group order. Which
//! thread plays a group changes nothing, so the number of threads does not change the result.

use super::actor::{ActorMsg, ActorSettings, Snapshots, play_group};
use super::candidates::Candidate;
use super::transport::group_messages;
use crate::game::GameRef;
use crate::util::SplitMix64;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The roles that own a random stream of a lock-step run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The learner's draws of an epoch (batches, memory and reservoir sampling).
    Learner,
    /// One group of episodes.
    Group,
}

/// The seed of the random stream of `role` at (`epoch`, `index`) in the run seeded with
/// `seed`: the four numbers pass through SplitMix64's mixer in turn, so neighbouring epochs
/// and groups get unrelated streams.
pub fn stream_seed(seed: u64, role: Stream, epoch: u64, index: u64) -> u64 {
    let tag = match role {
        Stream::Learner => 0x4C45_4152_4E45_5200,
        Stream::Group => 0x4752_4F55_5000_0000,
    };
    let mut x = seed;
    for v in [tag, epoch, index] {
        x = SplitMix64::new(x ^ v).next_u64();
    }
    x
}

/// The in-process actors of a lock-step run.
pub struct LockstepActors {
    game: GameRef,
    settings: ActorSettings,
    seed: u64,
    threads: usize,
}

impl LockstepActors {
    /// Actors for the run seeded with `seed`, on at most `threads` threads per wave.
    pub fn new(game: GameRef, settings: ActorSettings, seed: u64, threads: usize) -> Self {
        LockstepActors {
            game,
            settings,
            seed,
            threads: threads.max(1),
        }
    }

    /// Plays groups `first..first + n` of epoch `snaps.epoch` and returns their messages in
    /// group order (each group's trajectories, then its candidate return if it ranked one).
    /// `halt` is asked before every group: once it says `true` the wave is abandoned and
    /// `None` returned.
    pub fn play(
        &self,
        snaps: &Snapshots,
        first: u64,
        n: usize,
        halt: &(dyn Fn() -> bool + Sync),
    ) -> Option<Vec<ActorMsg>> {
        let candidates = Candidate::all().to_vec();
        let results: Vec<Mutex<Vec<ActorMsg>>> = (0..n).map(|_| Mutex::default()).collect();
        let next = AtomicUsize::new(0);
        let halted = AtomicBool::new(false);
        let work = || {
            loop {
                if halted.load(Ordering::Relaxed) {
                    return;
                }
                if halt() {
                    halted.store(true, Ordering::Relaxed);
                    return;
                }
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n {
                    return;
                }
                let g = first + k as u64;
                let mut rng =
                    SplitMix64::new(stream_seed(self.seed, Stream::Group, snaps.epoch, g));
                let (trajs, eval) =
                    play_group(&self.game, snaps, &self.settings, &candidates, &mut rng);
                let msgs = group_messages(trajs, eval, snaps.epoch, self.settings.games_per_group);
                *results[k].lock().expect("a lock-step group's slot") = msgs;
            }
        };
        let threads = self.threads.min(n);
        if threads <= 1 {
            work();
        } else {
            std::thread::scope(|scope| {
                for _ in 0..threads {
                    scope.spawn(work);
                }
            });
        }
        if halted.into_inner() {
            return None;
        }
        Some(
            results
                .into_iter()
                .flat_map(|m| m.into_inner().expect("a lock-step group's slot"))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{Stream, stream_seed};

    #[test]
    fn streams_differ_by_role_epoch_and_index_and_repeat() {
        let a = stream_seed(7, Stream::Group, 3, 1);
        assert_eq!(a, stream_seed(7, Stream::Group, 3, 1));
        for other in [
            stream_seed(8, Stream::Group, 3, 1),
            stream_seed(7, Stream::Learner, 3, 1),
            stream_seed(7, Stream::Group, 4, 1),
            stream_seed(7, Stream::Group, 3, 2),
            stream_seed(7, Stream::Group, 1, 3),
        ] {
            assert_ne!(a, other);
        }
    }
}

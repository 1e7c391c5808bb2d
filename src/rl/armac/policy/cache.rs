//! The shared caches of the fast range-query path (see the parent module's docs): kept
//! recurrent states and probability tables (least recently used out first), the keys some
//! thread is computing right now, and the counters behind [`RangeStats`].

use crate::game::Action;
use crate::games::cards::{HOLE_MASKS, NUM_HOLE_HANDS};
use crate::nn::armac::RecurrentState;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Default memory budget of the kept recurrent states (all rows of one key: at most
/// `1326 × 2 × R × 4` bytes, 2.7 MB at `R = 256`).
pub const DEFAULT_RANGE_CACHE_BYTES: usize = 192 << 20;

/// Kept probability tables (all rows of one key, `1326 × A × 4` bytes each).
const PROB_CACHE_ENTRIES: usize = 2048;

/// A map shared by the threads of an evaluation that holds at most `capacity` entries and
/// drops the least recently used one when full.
pub(super) struct LruCache<V> {
    capacity: usize,
    inner: Mutex<LruInner<V>>,
}

struct LruInner<V> {
    map: HashMap<Vec<Action>, (Arc<V>, u64)>,
    clock: u64,
}

impl<V> LruCache<V> {
    pub(super) fn new(capacity: usize) -> Self {
        LruCache {
            capacity,
            inner: Mutex::new(LruInner {
                map: HashMap::new(),
                clock: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruInner<V>> {
        // A panic while holding the lock leaves the map consistent (every update is one
        // insert or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn get(&self, key: &[Action]) -> Option<Arc<V>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.map.get_mut(key)?;
        entry.1 = now;
        Some(entry.0.clone())
    }

    pub(super) fn put(&self, key: Vec<Action>, value: Arc<V>) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        inner.map.insert(key, (value, now));
        while inner.map.len() > self.capacity {
            let oldest = inner
                .map
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => inner.map.remove(&k),
                None => break,
            };
        }
    }

    pub(super) fn clear(&self) {
        self.lock().map.clear();
    }
}

/// Counters of the fast range-query path since the policy was built (or
/// [`ArmacAveragePolicy::reset_range_cache`](super::ArmacAveragePolicy::reset_range_cache)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RangeStats {
    /// Range queries answered by the fast path.
    pub queries: u64,
    /// Queries whose probabilities were kept from an earlier query (no forward pass).
    pub prob_hits: u64,
    /// Encoder steps of 1326 rows computed (recurrent nets).
    pub encoder_steps: u64,
    /// Encoder steps skipped because a kept state covered them (recurrent nets).
    pub reused_steps: u64,
    /// Rows those computed steps had in all: 1326 per step before the flop, fewer after it
    /// (hands that hold a board card are dropped).
    pub encoder_rows: u64,
    /// The computed steps that were pre-flop (no board yet: states any deal can reuse).
    pub preflop_steps: u64,
    /// Forward passes of the average-policy head over 1326 rows.
    pub head_passes: u64,
    /// Queries for a few hands ([`FEW_HANDS`](super::FEW_HANDS)) answered from those hands'
    /// rows alone (not counted in `queries`).
    pub few_queries: u64,
    /// Rows those queries stepped through the recurrent encoder, all steps together.
    pub few_rows: u64,
}

#[derive(Default)]
pub(super) struct RangeCounters {
    pub(super) queries: AtomicU64,
    pub(super) prob_hits: AtomicU64,
    pub(super) encoder_steps: AtomicU64,
    pub(super) reused_steps: AtomicU64,
    pub(super) encoder_rows: AtomicU64,
    pub(super) preflop_steps: AtomicU64,
    pub(super) head_passes: AtomicU64,
    pub(super) few_queries: AtomicU64,
    pub(super) few_rows: AtomicU64,
}

impl RangeCounters {
    pub(super) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets every counter back to 0.
    pub(super) fn reset(&self) {
        for x in [
            &self.queries,
            &self.prob_hits,
            &self.encoder_steps,
            &self.reused_steps,
            &self.encoder_rows,
            &self.preflop_steps,
            &self.head_passes,
            &self.few_queries,
            &self.few_rows,
        ] {
            x.store(0, Ordering::Relaxed);
        }
    }

    pub(super) fn snapshot(&self) -> RangeStats {
        RangeStats {
            queries: self.queries.load(Ordering::Relaxed),
            prob_hits: self.prob_hits.load(Ordering::Relaxed),
            encoder_steps: self.encoder_steps.load(Ordering::Relaxed),
            reused_steps: self.reused_steps.load(Ordering::Relaxed),
            encoder_rows: self.encoder_rows.load(Ordering::Relaxed),
            preflop_steps: self.preflop_steps.load(Ordering::Relaxed),
            head_passes: self.head_passes.load(Ordering::Relaxed),
            few_queries: self.few_queries.load(Ordering::Relaxed),
            few_rows: self.few_rows.load(Ordering::Relaxed),
        }
    }
}

/// The shared caches of the fast range path.
pub(super) struct RangeCache {
    pub(super) states: LruCache<KeptState>,
    pub(super) probs: LruCache<Vec<f32>>,
    pub(super) in_flight: InFlight,
    pub(super) counters: RangeCounters,
}

/// The keys whose probabilities some thread is computing right now. A second thread that asks
/// for one of them waits for the first instead of repeating its forward passes (at the start of
/// an evaluation every worker asks for the same pre-flop states at once).
#[derive(Default)]
pub(super) struct InFlight {
    keys: Mutex<std::collections::HashSet<Vec<Action>>>,
    done: std::sync::Condvar,
}

/// A claim on a key of [`InFlight`]: released, and waiting threads woken, when dropped (also
/// when the computation fails or panics).
pub(super) struct Claim<'a> {
    owner: &'a InFlight,
    key: Vec<Action>,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<Vec<Action>>> {
        // Every update is one insert or remove: a poisoned lock is still consistent.
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Some` claim when no thread is computing `key` (the caller computes it); `None` after
    /// waiting for the thread that was (the caller looks in the cache again).
    pub(super) fn claim(&self, key: &[Action]) -> Option<Claim<'_>> {
        let mut keys = self.lock();
        if keys.contains(key) {
            while keys.contains(key) {
                keys = self.done.wait(keys).unwrap_or_else(|e| e.into_inner());
            }
            return None;
        }
        keys.insert(key.to_vec());
        Some(Claim {
            owner: self,
            key: key.to_vec(),
        })
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.owner.lock().remove(&self.key);
        self.owner.done.notify_all();
    }
}

impl RangeCache {
    pub(super) fn new(state_bytes: usize, row_state_bytes: usize) -> Self {
        let per_entry = (NUM_HOLE_HANDS * row_state_bytes).max(1);
        RangeCache {
            states: LruCache::new(state_bytes / per_entry),
            probs: LruCache::new(PROB_CACHE_ENTRIES),
            in_flight: InFlight::default(),
            counters: RangeCounters::default(),
        }
    }
}

/// A kept recurrent state: one row per hole-card hand that shares no card with the board of its
/// key (hands that do cannot be held there, so their rows are dropped once the board shows).
pub(super) struct KeptState {
    /// Ascending hole-card indices, one per row of `state`.
    pub(super) hands: Vec<u16>,
    pub(super) state: RecurrentState,
}

impl KeptState {
    /// This state restricted to the hands that miss `board` (a card mask); `None` when every
    /// hand does (no rows copied).
    pub(super) fn live_rows(&self, board: u64) -> Option<KeptState> {
        let keep: Vec<usize> = (0..self.hands.len())
            .filter(|&r| HOLE_MASKS[self.hands[r] as usize] & board == 0)
            .collect();
        if keep.len() == self.hands.len() {
            return None;
        }
        let h = self.state.hidden.len() / self.state.rows.max(1);
        let mut out = KeptState {
            hands: keep.iter().map(|&r| self.hands[r]).collect(),
            state: RecurrentState {
                rows: keep.len(),
                hidden: Vec::with_capacity(keep.len() * h),
                cell: Vec::with_capacity(keep.len() * h),
            },
        };
        for &r in &keep {
            out.state
                .hidden
                .extend_from_slice(&self.state.hidden[r * h..(r + 1) * h]);
            out.state
                .cell
                .extend_from_slice(&self.state.cell[r * h..(r + 1) * h]);
        }
        Some(out)
    }
}

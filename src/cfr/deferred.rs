//! Deferred, sharded table updates: how the sampled solvers (`os-mccfr`, `es-mccfr`, … and
//! `pos-mccfr` with `walks > 1`) run a batch of walks in parallel against tables that stay
//! fixed, then apply the walks' updates.
//!
//! During a player turn each chunk of walks writes its updates into its own [`Shards`] log,
//! bucketed by [`shard_of`] the entry's key: regret, policy and average-policy entries by the
//! first action of their infoset, baseline entries by their slot. After the walks, shard `s`
//! of every log is applied by one worker, log after log (walk order) and, within a bucket, in
//! the order the walks wrote it. Every table entry thus receives its increments in the same
//! order as a sequential apply of the logs would give it, whatever the number of workers.
//!
//! [`parallel_turn`] is the only place that writes the tables through raw pointers (the
//! workers write disjoint entries of the same buffers); its safety argument is in its body.

use crate::cfr::regret_match_infoset;
use crate::cfr::team::{Team, shard_of, walk_then_apply};
use crossbeam::utils::CachePadded;
use std::sync::RwLock;

/// A baseline entry a walk feeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Slot {
    /// The learned baseline of the edge into history `c` (history tables).
    History(u32),
    /// The learned-infoset baseline slot `g` of player `p` (infoset tables of `p`).
    Infoset(u8, u32),
    /// The predictive baseline of the edge into history `c`: set, not averaged.
    Predictive(u32),
}

impl Slot {
    /// The index the slot is sharded by.
    #[inline]
    fn key(self) -> usize {
        match self {
            Slot::History(c) | Slot::Predictive(c) | Slot::Infoset(_, c) => c as usize,
        }
    }
}

/// The arithmetic that differs between the solvers (each keeps its own, bit for bit).
pub(crate) trait Rules: Sync {
    /// A regret after an increment (clamped at zero under regret matching+).
    fn clamp(&self, r: f64) -> f64;
    /// Folds sample `x` into a learned baseline's `(value, weight)`.
    fn learn(&self, value: &mut f64, weight: &mut f64, x: f64);
}

/// The tables a log is applied to, by role (both solvers keep the same seven kinds).
pub(crate) struct TablesMut<'a> {
    pub regrets: [&'a mut [f64]; 2],
    pub avg: [&'a mut [f64]; 2],
    /// Regret matching of `regrets`, refreshed for every infoset whose regrets change.
    pub cur: [&'a mut [f64]; 2],
    /// Per history: baseline value (set by [`Slot::Predictive`]) and weight.
    pub base_value: &'a mut [f64],
    pub base_weight: &'a mut [f64],
    /// Per player and infoset slot: baseline value and weight.
    pub inf_value: [&'a mut [f64]; 2],
    pub inf_weight: [&'a mut [f64]; 2],
}

/// Tables a [`parallel_turn`] applies logs to.
pub(crate) trait Deferrable: Sync {
    /// The buffers of `self`, by role.
    fn tables_mut(&mut self) -> TablesMut<'_>;
}

/// The updates of a run of walks that fall in one shard, in the order the walks made them.
#[derive(Debug, Default)]
pub(crate) struct Bucket {
    /// `(player, first action, actions)` of every regret update; their increments, in order,
    /// in `deltas`.
    infosets: Vec<(u8, u32, u32)>,
    deltas: Vec<f64>,
    /// Per player, `(action, increment)` into the average-policy weights.
    avg: [Vec<(u32, f64)>; 2],
    /// Baseline samples and predictive values.
    baseline: Vec<(Slot, f64)>,
}

impl Bucket {
    fn clear(&mut self) {
        self.infosets.clear();
        self.deltas.clear();
        self.avg[0].clear();
        self.avg[1].clear();
        self.baseline.clear();
    }
}

/// The updates of a run of walks, bucketed by shard as they are logged. Records only enter
/// through the methods below, which route them by their key, so bucket `s` holds only entries
/// of shard `s` for the current number of shards.
#[derive(Debug, Default)]
pub(crate) struct Shards {
    buckets: Vec<Bucket>,
}

impl Shards {
    /// Empties the log (keeping its buffers) for `shards` shards.
    pub(crate) fn clear(&mut self, shards: usize) {
        self.buckets.resize_with(shards.max(1), Default::default);
        for b in &mut self.buckets {
            b.clear();
        }
    }

    /// The bucket of key `key`.
    #[inline]
    fn bucket(&mut self, key: usize) -> &mut Bucket {
        let s = shard_of(key, self.buckets.len());
        &mut self.buckets[s]
    }

    /// Logs the regret increments `delta(k)`, `k < n` (called in that order), of player `p`'s
    /// infoset whose actions are `start..start + n`; the apply clamps each updated regret
    /// ([`Rules::clamp`]) and refreshes the infoset's policy. `start..start + n` must be a
    /// whole infoset (the shards of different infosets then own disjoint entries).
    #[inline]
    pub(crate) fn regrets(
        &mut self,
        p: usize,
        start: usize,
        n: usize,
        delta: impl FnMut(usize) -> f64,
    ) {
        let b = self.bucket(start);
        b.infosets.push((p as u8, start as u32, n as u32));
        b.deltas.extend((0..n).map(delta));
    }

    /// Logs `avg[q][start + k] += w · cur[k]` for the infoset whose actions are
    /// `start..start + cur.len()` (a whole infoset, as in [`Shards::regrets`]).
    #[inline]
    pub(crate) fn avg(&mut self, q: usize, start: usize, cur: &[f64], w: f64) {
        let avg = &mut self.bucket(start).avg[q];
        avg.extend(
            cur.iter()
                .enumerate()
                .map(|(k, s)| ((start + k) as u32, w * s)),
        );
    }

    /// Logs baseline sample (or predictive value) `x` for `slot`.
    #[inline]
    pub(crate) fn baseline(&mut self, slot: Slot, x: f64) {
        self.bucket(slot.key()).baseline.push((slot, x));
    }

    /// Applies every bucket, in order, to `tables` (one thread: what a sequential apply of
    /// the log does, through the same code as [`parallel_turn`]).
    #[cfg(test)]
    pub(crate) fn apply_in_order(&self, tables: TablesMut<'_>, rules: &impl Rules) {
        let ptrs = Ptrs::new(tables);
        for b in &self.buckets {
            // SAFETY: `ptrs` comes from exclusive borrows that live until the end of this
            // function, and this thread is the only one using them.
            unsafe { ptrs.apply(b, rules) };
        }
    }
}

/// A log kept per chunk of walks: its [`Shards`] and whatever scratch the walks keep with it.
pub(crate) trait Logged: Send + Sync {
    fn shards(&self) -> &Shards;
    fn shards_mut(&mut self) -> &mut Shards;
}

/// One parallel player turn: `walk(c, tab, log)` for every chunk `c` of `logs` (on `team`'s
/// members when there is a team, whose size must be `logs.len()`; chunk 0 on this thread
/// otherwise), each reading `tab` and writing into its own log (cleared for `logs.len()`
/// shards beforehand); then shard `s` of every log, in chunk order, is applied to `tab`'s
/// tables, by member `s` after a barrier with `parallel_apply`, else by this thread, shard
/// after shard, once the walks are done. A shard whose apply finds `skip_apply()` true is
/// left as it is (an abandoned turn: the walks saw a stop, so nothing of them is kept);
/// `skip_apply` is asked after every walk has returned, so every applier sees the walks'
/// last word.
pub(crate) fn parallel_turn<T: Deferrable, L: Logged>(
    team: Option<&Team>,
    parallel_apply: bool,
    tab: &mut T,
    logs: &[CachePadded<RwLock<L>>],
    rules: &impl Rules,
    skip_apply: &(dyn Fn() -> bool + Sync),
    walk: &(dyn Fn(usize, &T, &mut L) + Sync),
) {
    let chunks = logs.len();
    assert_eq!(team.map_or(1, Team::size), chunks, "one log per member");
    let ptrs = Ptrs::new(tab.tables_mut());
    let tab: &T = tab;
    let walk_chunk = |c: usize| {
        let mut log = logs[c].write().unwrap_or_else(|e| e.into_inner());
        log.shards_mut().clear(chunks);
        walk(c, tab, &mut log);
    };
    // Shard `s` of every log, in walk order.
    let apply_shard = |s: usize| {
        if skip_apply() {
            return;
        }
        for log in logs {
            let log = log.read().unwrap_or_else(|e| e.into_inner());
            let shards = log.shards();
            assert_eq!(shards.buckets.len(), chunks, "a log of {chunks} shards");
            // SAFETY:
            // * `ptrs` points at the buffers of `tab`, alive and not resized while the borrow
            //   of `tab` lasts (the whole call); nothing but `tab` reaches them meanwhile.
            // * The walks only read them, through `tab`, and `walk_then_apply` starts an apply
            //   only once every walk has returned (the team's barrier, which reports whether
            //   every member arrived; or after `Team::run`, or after the single walk).
            // * Shard `s` is applied by one thread: member `s`, or this thread for all shards.
            // * The apply of shard `s` touches only entries of shard `s`: records enter a log
            //   only through `Shards`' methods, routed by `shard_of(key, chunks)` (the assert
            //   above pins the shard count); regret, policy and average entries are keyed by
            //   the first action of their infoset (infosets own disjoint action ranges),
            //   baseline entries by their own index. So no two threads touch one entry.
            unsafe { ptrs.apply(&shards.buckets[s], rules) };
        }
    };
    walk_then_apply(team, chunks, parallel_apply, &walk_chunk, &apply_shard);
}

/// One buffer as a raw pointer and length, for the sharded apply.
#[derive(Clone, Copy, Debug)]
struct Buf(*mut f64, usize);

impl Buf {
    fn of(v: &mut [f64]) -> Buf {
        Buf(v.as_mut_ptr(), v.len())
    }

    /// # Safety
    /// The buffer is alive and nobody else accesses entry `i` meanwhile.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn at(&self, i: usize) -> &mut f64 {
        assert!(i < self.1, "table index {i} out of {}", self.1);
        unsafe { &mut *self.0.add(i) }
    }

    /// # Safety
    /// As [`Buf::at`] for entries `i..i + n`.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, i: usize, n: usize) -> &mut [f64] {
        assert!(i + n <= self.1, "table range {i}+{n} out of {}", self.1);
        unsafe { std::slice::from_raw_parts_mut(self.0.add(i), n) }
    }
}

/// The buffers of a [`TablesMut`] as raw pointers.
#[derive(Clone, Copy, Debug)]
struct Ptrs {
    regrets: [Buf; 2],
    avg: [Buf; 2],
    cur: [Buf; 2],
    base_value: Buf,
    base_weight: Buf,
    inf_value: [Buf; 2],
    inf_weight: [Buf; 2],
}

// SAFETY: the pointers are only dereferenced in `Ptrs::apply`, under its contract (each thread
// touches the entries of its own shard only).
unsafe impl Send for Ptrs {}
unsafe impl Sync for Ptrs {}

impl Ptrs {
    fn new(t: TablesMut<'_>) -> Ptrs {
        let pair = |[a, b]: [&mut [f64]; 2]| [Buf::of(a), Buf::of(b)];
        Ptrs {
            regrets: pair(t.regrets),
            avg: pair(t.avg),
            cur: pair(t.cur),
            base_value: Buf::of(t.base_value),
            base_weight: Buf::of(t.base_weight),
            inf_value: pair(t.inf_value),
            inf_weight: pair(t.inf_weight),
        }
    }

    /// Applies bucket `b` in the order it was written: regret updates (each infoset's policy
    /// refreshed right after its regrets), average-policy increments of player 0 then 1, then
    /// the baseline samples. (Each kind of record goes to its own tables and the policy is
    /// read by none of them, so only the order within a kind matters.)
    ///
    /// # Safety
    /// The buffers are alive and no other thread accesses the entries of `b`'s shard meanwhile.
    unsafe fn apply(&self, b: &Bucket, rules: &impl Rules) {
        let mut deltas = b.deltas.iter();
        unsafe {
            for &(p, start, n) in &b.infosets {
                let (p, start, n) = (p as usize, start as usize, n as usize);
                let reg = self.regrets[p].slice(start, n);
                for (x, d) in reg.iter_mut().zip(&mut deltas) {
                    *x = rules.clamp(*x + d);
                }
                regret_match_infoset(reg, self.cur[p].slice(start, n));
            }
            for (cum, avg) in self.avg.iter().zip(&b.avg) {
                for &(g, d) in avg {
                    *cum.at(g as usize) += d;
                }
            }
            for &(slot, x) in &b.baseline {
                match slot {
                    Slot::History(c) => {
                        let c = c as usize;
                        rules.learn(self.base_value.at(c), self.base_weight.at(c), x);
                    }
                    Slot::Infoset(p, g) => {
                        let (p, g) = (p as usize, g as usize);
                        rules.learn(self.inf_value[p].at(g), self.inf_weight[p].at(g), x);
                    }
                    Slot::Predictive(c) => *self.base_value.at(c as usize) = x,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Deferrable, Logged, Rules, Shards, Slot, TablesMut, parallel_turn};
    use crate::cfr::regret_match_infoset;
    use crate::cfr::team::Team;
    use crate::util::SplitMix64;
    use crossbeam::utils::CachePadded;
    use std::ops::Range;
    use std::sync::RwLock;

    /// Regret matching+'s clamp and an exponential baseline: both depend on the order of the
    /// updates, so an apply out of order shows.
    struct Plus;

    impl Rules for Plus {
        fn clamp(&self, r: f64) -> f64 {
            r.max(0.0)
        }

        fn learn(&self, value: &mut f64, weight: &mut f64, x: f64) {
            *value = 0.7 * *value + 0.3 * x;
            *weight += 1.0;
        }
    }

    #[derive(Clone, Debug)]
    struct Tabs {
        regrets: [Vec<f64>; 2],
        avg: [Vec<f64>; 2],
        cur: [Vec<f64>; 2],
        base_value: Vec<f64>,
        base_weight: Vec<f64>,
        inf_value: [Vec<f64>; 2],
        inf_weight: [Vec<f64>; 2],
    }

    impl Tabs {
        /// Every entry's bits, table after table.
        fn bits(&self) -> Vec<u64> {
            let [r0, r1] = &self.regrets;
            let [a0, a1] = &self.avg;
            let [c0, c1] = &self.cur;
            let [i0, i1] = &self.inf_value;
            let [w0, w1] = &self.inf_weight;
            [
                r0,
                r1,
                a0,
                a1,
                c0,
                c1,
                &self.base_value,
                &self.base_weight,
                i0,
                i1,
                w0,
                w1,
            ]
            .iter()
            .flat_map(|v| v.iter().map(|x| x.to_bits()))
            .collect()
        }
    }

    impl Deferrable for Tabs {
        fn tables_mut(&mut self) -> TablesMut<'_> {
            let Tabs {
                regrets: [r0, r1],
                avg: [a0, a1],
                cur: [c0, c1],
                base_value,
                base_weight,
                inf_value: [i0, i1],
                inf_weight: [w0, w1],
            } = self;
            TablesMut {
                regrets: [r0, r1],
                avg: [a0, a1],
                cur: [c0, c1],
                base_value,
                base_weight,
                inf_value: [i0, i1],
                inf_weight: [w0, w1],
            }
        }
    }

    #[derive(Default)]
    struct Log(Shards);

    impl Logged for Log {
        fn shards(&self) -> &Shards {
            &self.0
        }

        fn shards_mut(&mut self) -> &mut Shards {
            &mut self.0
        }
    }

    /// One logged update.
    #[derive(Clone, Debug)]
    enum Rec {
        Regrets(usize, Range<usize>, Vec<f64>),
        Avg(usize, Range<usize>, f64),
        Base(Slot, f64),
    }

    /// Infosets of 1 to 40 actions (many straddle two 16-entry blocks) covering `0..n`.
    fn partition(rng: &mut SplitMix64, n: usize) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let end = (start + 1 + rng.below(40)).min(n);
            out.push(start..end);
            start = end;
        }
        out
    }

    fn signed(rng: &mut SplitMix64) -> f64 {
        2.0 * rng.next_f64() - 1.0
    }

    /// Random tables and `chunks` logs of random records (regret updates concentrated on a
    /// few infosets, so many entries receive several updates from several chunks).
    fn setup(chunks: usize) -> (Tabs, Vec<Vec<Rec>>) {
        let mut rng = SplitMix64::new(7);
        let (actions, histories) = (500, 300);
        let mut vec = |n: usize| (0..n).map(|_| signed(&mut rng)).collect::<Vec<f64>>();
        let mut tabs = Tabs {
            regrets: [vec(actions), vec(actions)],
            avg: [vec(actions), vec(actions)],
            cur: [vec(actions), vec(actions)],
            base_value: vec(histories),
            base_weight: vec(histories),
            inf_value: [vec(actions), vec(actions)],
            inf_weight: [vec(actions), vec(actions)],
        };
        let infosets = [partition(&mut rng, actions), partition(&mut rng, actions)];
        for (p, inf) in infosets.iter().enumerate() {
            for r in inf {
                let (regrets, cur) = (&tabs.regrets[p][r.clone()], &mut tabs.cur[p][r.clone()]);
                regret_match_infoset(regrets, cur);
            }
        }
        let logs = (0..chunks)
            .map(|_| {
                (0..300)
                    .map(|_| {
                        let p = rng.below(2);
                        let r = infosets[p][rng.below(infosets[p].len().min(12))].clone();
                        match rng.below(5) {
                            0 | 1 => {
                                let d = r.clone().map(|_| signed(&mut rng)).collect();
                                Rec::Regrets(p, r, d)
                            }
                            2 => Rec::Avg(p, r, rng.next_f64()),
                            _ => {
                                let slot = match rng.below(3) {
                                    0 => Slot::History(rng.below(20) as u32),
                                    1 => Slot::Infoset(p as u8, rng.below(20) as u32),
                                    _ => Slot::Predictive(rng.below(20) as u32),
                                };
                                Rec::Base(slot, signed(&mut rng))
                            }
                        }
                    })
                    .collect()
            })
            .collect();
        (tabs, logs)
    }

    /// The logs applied one record after the other, in log order, straight into the tables
    /// (average increments from the policy before the turn, as the walks read it).
    fn sequential(before: &Tabs, logs: &[Vec<Rec>]) -> Tabs {
        let mut t = before.clone();
        for rec in logs.iter().flatten() {
            match rec {
                Rec::Regrets(p, r, d) => {
                    for (x, d) in t.regrets[*p][r.clone()].iter_mut().zip(d) {
                        *x = Plus.clamp(*x + d);
                    }
                    regret_match_infoset(&t.regrets[*p][r.clone()], &mut t.cur[*p][r.clone()]);
                }
                Rec::Avg(q, r, w) => {
                    for g in r.clone() {
                        t.avg[*q][g] += w * before.cur[*q][g];
                    }
                }
                Rec::Base(slot, x) => match *slot {
                    Slot::History(c) => {
                        let c = c as usize;
                        Plus.learn(&mut t.base_value[c], &mut t.base_weight[c], *x);
                    }
                    Slot::Infoset(p, g) => {
                        let (p, g) = (p as usize, g as usize);
                        Plus.learn(&mut t.inf_value[p][g], &mut t.inf_weight[p][g], *x);
                    }
                    Slot::Predictive(c) => t.base_value[c as usize] = *x,
                },
            }
        }
        t
    }

    /// Writes `recs` into `shards` as a walk would, reading the policy from `tab`.
    fn log(shards: &mut Shards, tab: &Tabs, recs: &[Rec]) {
        for rec in recs {
            match rec {
                Rec::Regrets(p, r, d) => shards.regrets(*p, r.start, r.len(), |k| d[k]),
                Rec::Avg(q, r, w) => shards.avg(*q, r.start, &tab.cur[*q][r.clone()], *w),
                Rec::Base(slot, x) => shards.baseline(*slot, *x),
            }
        }
    }

    /// Updates from several chunks, sharded, applied by several workers (or shard after
    /// shard by one thread) leave every entry exactly as the sequential apply of the chunks'
    /// records in order; the walks see the tables as they were before the turn.
    #[test]
    fn sharded_apply_equals_the_sequential_apply() {
        let (before, recs) = setup(3);
        let expected = sequential(&before, &recs).bits();
        assert_ne!(expected, before.bits());
        let team = Team::new(3);
        for (team, parallel_apply) in [(Some(&team), true), (Some(&team), false), (None, true)] {
            // Without a team, one chunk holding every record.
            let chunks: Vec<Vec<Rec>> = match team {
                Some(_) => recs.clone(),
                None => vec![recs.concat()],
            };
            let logs: Vec<CachePadded<RwLock<Log>>> =
                chunks.iter().map(|_| Default::default()).collect();
            let walk = |c: usize, tab: &Tabs, l: &mut Log| {
                assert_eq!(tab.bits(), before.bits(), "a walk saw updates");
                log(&mut l.0, tab, &chunks[c]);
            };
            // A turn that applies its records, and one abandoned (they are logged, not applied).
            for (skip, want) in [(false, &expected), (true, &before.bits())] {
                let mut tab = before.clone();
                parallel_turn(
                    team,
                    parallel_apply,
                    &mut tab,
                    &logs,
                    &Plus,
                    &|| skip,
                    &walk,
                );
                assert!(
                    tab.bits() == *want,
                    "skip {skip}, team {} parallel_apply {parallel_apply}",
                    team.is_some()
                );
            }
            let logged = logs.iter().any(|l| {
                let l = l.read().unwrap();
                l.0.buckets.iter().any(|b| !b.infosets.is_empty())
            });
            assert!(logged, "the walks of the skipped turn logged nothing");
        }
        // One log of three shards, applied bucket after bucket.
        let mut shards = Shards::default();
        shards.clear(3);
        log(&mut shards, &before, &recs.concat());
        let mut tab = before.clone();
        shards.apply_in_order(tab.tables_mut(), &Plus);
        assert!(tab.bits() == expected, "apply_in_order");
    }
}

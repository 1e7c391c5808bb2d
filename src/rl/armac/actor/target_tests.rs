//! The actors' advantage targets against exact ones: corrected targets are unbiased whatever
//! the critic (per history and per information state), the chance baseline keeps them so, and
//! the corrected advantages follow their recursion.

use super::tests::{kuhn_ff, kuhn_table, latest_settings, one_past_epoch, small_ff};
use super::*;
use crate::games::load_game;
use crate::util::SplitMix64;

/// The exact advantages of `π^j` = `tp` (returns divided by `scale`, averaged per
/// information state with `AdvantageTarget::Infoset`) at every decision history of `game`,
/// keyed by `key(acting player, player 0's and player 1's information-state tensors)`.
fn exact_targets(
    game: &dyn crate::game::Game,
    tp: &crate::tree::TreePolicy,
    scale: f64,
    target: AdvantageTarget,
    key: impl Fn(usize, &[f32], &[f32]) -> Vec<u32>,
) -> std::collections::HashMap<Vec<u32>, Vec<f32>> {
    use crate::tree::history::{HistoryKind, HistoryTree};
    let (na, isz) = (
        game.num_distinct_actions(),
        game.information_state_tensor_size(),
    );
    let tree = crate::tree::PublicTree::build(game).unwrap();
    let ht = Arc::new(HistoryTree::build(game, &tree).unwrap());
    let exact = ExactValues::new(ht.clone(), &tree, tp, scale, target);
    let mut want = std::collections::HashMap::new();
    for h in 0..ht.len() {
        if let HistoryKind::Decision(p) = ht.kind[h] {
            let acts = ht.actions_to(h);
            let st = crate::game::replay(game, &acts).unwrap();
            let (mut i0, mut i1) = (vec![0.0; isz], vec![0.0; isz]);
            st.information_state_tensor(0, &mut i0);
            st.information_state_tensor(1, &mut i1);
            want.insert(key(p, &i0, &i1), exact.advantages(&acts, p, na).unwrap());
        }
    }
    want
}

/// Per history key: count, sums and sums of squares of the stored targets.
type Moments = std::collections::HashMap<Vec<u32>, (f64, Vec<f64>, Vec<f64>)>;

/// Adds one stored target to `acc`.
fn add_target(acc: &mut Moments, key: Vec<u32>, adv: &[f32]) {
    let na = adv.len();
    let e = acc
        .entry(key)
        .or_insert((0.0, vec![0.0; na], vec![0.0; na]));
    e.0 += 1.0;
    for (a, &x) in adv.iter().enumerate() {
        e.1[a] += f64::from(x);
        e.2[a] += f64::from(x).powi(2);
    }
}

/// The largest distance, in standard errors, between a mean target and `exact` over the
/// histories with at least `min_n` targets, and the number of those histories.
fn worst_deviation(acc: &Moments, exact: impl Fn(&[u32]) -> Vec<f32>, min_n: f64) -> (f64, usize) {
    let mut worst = 0.0f64;
    let mut judged = 0;
    for (k, (n, sum, sq)) in acc.iter().filter(|(_, e)| e.0 >= min_n) {
        judged += 1;
        let exact = exact(k);
        for (a, x) in exact.iter().enumerate() {
            let mean = sum[a] / n;
            let var = (sq[a] / n - mean * mean).max(0.0);
            let se = (var / n).sqrt() + 1e-4;
            worst = worst.max((mean - f64::from(*x)).abs() / se);
        }
    }
    (worst, judged)
}

/// `AdvantageTarget::Corrected`: with a critic far from the truth (random weights), the
/// stored targets average, at every learning history, to `π^j`'s exact advantages there
/// (within 4 standard errors), while the critic's own advantages (`History`) do not.
#[test]
fn corrected_targets_are_unbiased_whatever_the_critic() {
    let game = load_game("kuhn_poker").unwrap();
    // π^j: a table passing with 0.3 / 0.8 at player 0's / 1's infosets.
    let (table, tp) = kuhn_table(game.as_ref(), [0.3, 0.8]);
    // Decision histories by both players' information-state tensors.
    let key = |_: usize, i0: &[f32], i1: &[f32]| -> Vec<u32> {
        i0.iter().chain(i1).map(|x| x.to_bits()).collect()
    };
    let want = exact_targets(game.as_ref(), &tp, 2.0, AdvantageTarget::History, key);
    let snaps = one_past_epoch(PastEpoch {
        policy: kuhn_ff(101),
        critic: kuhn_ff(20),
        exact: None,
        table: Some(Arc::new(table)),
    });
    // Per target kind: the worst deviation from the exact advantage in standard errors.
    let mut worst = Vec::new();
    for target in [AdvantageTarget::Corrected, AdvantageTarget::History] {
        let settings = latest_settings(target, Behaviour::Uniform);
        let mut rng = SplitMix64::new(17);
        let mut acc = Moments::default();
        for _ in 0..150 {
            let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
            for t in &trajs {
                for s in t.steps.iter().filter(|s| s.player == t.learning_player) {
                    let adv = s.advantage.as_ref().unwrap();
                    add_target(&mut acc, key(0, &s.info[0], &s.info[1]), adv);
                }
            }
        }
        assert_eq!(acc.len(), 24, "every learning history of Kuhn is sampled");
        worst.push(worst_deviation(&acc, |k| want[k].clone(), 0.0).0);
    }
    assert!(worst[0] < 4.5, "corrected targets off by {} s.e.", worst[0]);
    assert!(
        worst[1] > 20.0,
        "a random critic is biased: {} s.e.",
        worst[1]
    );
}

/// `AdvantageTarget::CorrectedInfoset` on Leduc (the opponent's card is private): with a
/// random critic, the stored targets average, per information state of the learning
/// player, to `π^j`'s exact advantages averaged over that state's histories, as the plain
/// corrected targets do; both are unbiased there, and the two differ sample by sample.
#[test]
fn corrected_infoset_targets_are_unbiased_per_information_state() {
    let game = load_game("leduc_poker").unwrap();
    let (table, tp) = mixed_table(game.as_ref());
    // Decision histories by the acting player and its information-state tensor.
    let key = |p: usize, i0: &[f32], i1: &[f32]| -> Vec<u32> {
        let info = if p == 0 { i0 } else { i1 };
        std::iter::once(p as u32)
            .chain(info.iter().map(|x| x.to_bits()))
            .collect()
    };
    let want = exact_targets(game.as_ref(), &tp, 26.0, AdvantageTarget::Infoset, key);
    let snaps = Snapshots {
        epoch: 3,
        latest: small_ff("leduc_poker", 10),
        latest_table: None,
        past: Vec::new(),
        previous: Some(PastEpoch {
            policy: small_ff("leduc_poker", 101),
            critic: small_ff("leduc_poker", 20),
            exact: None,
            table: Some(Arc::new(table)),
        }),
        best: Candidate::Average,
    };
    let mut worst = Vec::new();
    let mut firsts = Vec::new();
    for target in [
        AdvantageTarget::Corrected,
        AdvantageTarget::CorrectedInfoset,
    ] {
        // Returns divided by 26, as the exact values above: the random critic's outputs
        // are then as large as the true values, so a wrong offset would show.
        let settings = ActorSettings {
            reward_scale: 26.0,
            ..latest_settings(target, Behaviour::Uniform)
        };
        let mut rng = SplitMix64::new(23);
        let mut acc = Moments::default();
        let mut first = Vec::new();
        for _ in 0..400 {
            let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
            for t in &trajs {
                let lp = t.learning_player;
                for s in t.steps.iter().filter(|s| s.player == lp) {
                    let adv = s.advantage.as_ref().unwrap();
                    first.push(adv.clone());
                    add_target(&mut acc, key(lp, &s.info[0], &s.info[1]), adv);
                }
            }
        }
        let (w, judged) = worst_deviation(&acc, |k| want[k].clone(), 30.0);
        assert!(
            judged > 100,
            "{target:?}: {judged} information states judged"
        );
        worst.push(w);
        firsts.push(first);
    }
    // The same episodes (targets are computed after the actions are drawn).
    assert_eq!(firsts[0].len(), firsts[1].len());
    assert_ne!(
        firsts[0], firsts[1],
        "the information-state mean changes the targets"
    );
    assert!(worst[0] < 4.5, "corrected targets off by {} s.e.", worst[0]);
    assert!(
        worst[1] < 4.5,
        "corrected_infoset targets off by {} s.e.",
        worst[1]
    );
}

/// A fixed mixed policy at every infoset of `game` (weights `1 + (i + 3k) mod 4` over
/// the `k`-th legal action of infoset `i`), as a table and as a tree policy.
fn mixed_table(game: &dyn crate::game::Game) -> (PolicyTable, crate::tree::TreePolicy) {
    let isz = game.information_state_tensor_size();
    let na = game.num_distinct_actions();
    let tree = crate::tree::PublicTree::build(game).unwrap();
    let mut table = PolicyTable::default();
    let mut tp: crate::tree::TreePolicy = [Vec::new(), Vec::new()];
    for (p, tp) in tp.iter_mut().enumerate() {
        let inf = &tree.infosets[p];
        *tp = vec![0.0; inf.offset[inf.len()] as usize];
        for i in 0..inf.len() {
            let st = crate::game::replay(game, &inf.history[i]).unwrap();
            let mut own = vec![0.0; isz];
            st.information_state_tensor(p, &mut own);
            let (o, e) = (inf.offset[i] as usize, inf.offset[i + 1] as usize);
            let w: Vec<f64> = (0..e - o).map(|k| 1.0 + ((i + 3 * k) % 4) as f64).collect();
            let total: f64 = w.iter().sum();
            let mut row = vec![0.0f32; na];
            for (k, x) in w.iter().enumerate() {
                tp[o + k] = x / total;
                row[inf.actions[o + k]] = (x / total) as f32;
            }
            table.insert(p, &own, row);
        }
    }
    (table, tp)
}

/// `armac.chance_baseline` on Leduc: the same episodes (the baseline draws nothing), the
/// same targets after the public card and different ones before it in episodes that reach
/// it, and first-round targets that still average to `π^j`'s exact advantages with a
/// random critic (within 4.5 standard errors).
#[test]
fn chance_baseline_keeps_first_round_targets_unbiased() {
    const SCALE: f64 = 2.0;
    use crate::tree::PublicTree;
    use crate::tree::history::{HistoryKind, HistoryTree};
    let game = load_game("leduc_poker").unwrap();
    let na = game.num_distinct_actions();
    let isz = game.information_state_tensor_size();
    let tree = PublicTree::build(game.as_ref()).unwrap();
    let (table, tp) = mixed_table(game.as_ref());
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
    let exact = ExactValues::new(ht.clone(), &tree, &tp, SCALE, AdvantageTarget::History);
    let key =
        |i0: &[f32], i1: &[f32]| -> Vec<u32> { i0.iter().chain(i1).map(|x| x.to_bits()).collect() };
    // Exact advantages and chance nodes above, per decision history.
    let mut want = std::collections::HashMap::new();
    for h in 0..ht.len() {
        if let HistoryKind::Decision(p) = ht.kind[h] {
            let mut chances = 0;
            let mut a = h;
            while a != 0 {
                a = ht.parent[a] as usize;
                chances += usize::from(ht.kind[a] == HistoryKind::Chance);
            }
            let acts = ht.actions_to(h);
            let st = crate::game::replay(game.as_ref(), &acts).unwrap();
            let (mut i0, mut i1) = (vec![0.0; isz], vec![0.0; isz]);
            st.information_state_tensor(0, &mut i0);
            st.information_state_tensor(1, &mut i1);
            let adv = exact.advantages(&acts, p, na).unwrap();
            want.insert(key(&i0, &i1), (adv, chances));
        }
    }
    // Two deal nodes above the first round's decisions, three above the second's.
    assert!(want.values().all(|w| w.1 == 2 || w.1 == 3));
    let past = PastEpoch {
        policy: small_ff("leduc_poker", 101),
        critic: small_ff("leduc_poker", 20),
        exact: None,
        table: Some(Arc::new(table)),
    };
    let snaps = Snapshots {
        epoch: 3,
        latest: small_ff("leduc_poker", 10),
        latest_table: None,
        past: vec![past.clone()],
        previous: Some(past),
        best: Candidate::Average,
    };
    let mut without = latest_settings(AdvantageTarget::Corrected, Behaviour::Uniform);
    without.reward_scale = SCALE;
    let mut with = without.clone();
    with.chance_baseline = true;
    let mut acc = Moments::default();
    let (mut changed, mut second_round) = (0, 0);
    for seed in 0..150 {
        let (a, _) = play_group(
            &game,
            &snaps,
            &with,
            Candidate::all(),
            &mut SplitMix64::new(seed),
        );
        let (b, _) = play_group(
            &game,
            &snaps,
            &without,
            Candidate::all(),
            &mut SplitMix64::new(seed),
        );
        assert_eq!(a.len(), b.len());
        for (t, u) in a.iter().zip(&b) {
            assert_eq!(t.learning_player, u.learning_player);
            assert_eq!(t.steps.len(), u.steps.len());
            let reaches_second = t
                .steps
                .iter()
                .any(|s| want[&key(&s.info[0], &s.info[1])].1 == 3);
            for (s, r) in t.steps.iter().zip(&u.steps) {
                assert_eq!(s.action, r.action, "the baseline changes no action");
                if s.player != t.learning_player {
                    continue;
                }
                let chances = want[&key(&s.info[0], &s.info[1])].1;
                let got = s.advantage.as_ref().unwrap();
                if chances == 3 {
                    assert_eq!(got, r.advantage.as_ref().unwrap(), "after the card");
                    second_round += 1;
                    continue;
                }
                if reaches_second && got != r.advantage.as_ref().unwrap() {
                    changed += 1;
                }
                if !reaches_second {
                    assert_eq!(got, r.advantage.as_ref().unwrap(), "no card dealt");
                }
                add_target(&mut acc, key(&s.info[0], &s.info[1]), got);
            }
        }
    }
    assert!(
        changed > 1000 && second_round > 1000,
        "{changed} {second_round}"
    );
    // Nearly every first-round decision history (30 deals x 6 betting sequences) has
    // stored targets.
    let first_round = want.values().filter(|w| w.1 == 2).count();
    assert_eq!(first_round, 180);
    assert!(acc.len() + 5 >= first_round, "{} sampled", acc.len());
    // Standard errors need samples: histories with at least 30 targets.
    let (worst, judged) = worst_deviation(&acc, |k| want[k].0.clone(), 30.0);
    assert!(judged >= 100, "{judged} histories with 30 targets");
    assert!(worst < 4.5, "chance-baseline targets off by {worst} s.e.");
}

/// The correction by hand on a two-decision episode.
#[test]
fn corrected_advantages_follow_the_recursion() {
    let steps = [
        CvStep {
            step: 0,
            learner: true,
            q: vec![1.0, -1.0],
            pi: vec![0.25, 0.75],
            legal: vec![true, true],
            action: 1,
            behaviour: 0.5,
            chance_value: None,
        },
        CvStep {
            step: 1,
            learner: false,
            q: vec![2.0, 0.5],
            pi: vec![0.5, 0.5],
            legal: vec![true, true],
            action: 0,
            behaviour: 0.5,
            chance_value: None,
        },
    ];
    // Opponent: ũ = Σπq + (3 − q(a*)) = 1.25 + 1 = 2.25.
    // Learner: corr = (2.25 − (−1)) / 0.5 = 6.5; ũ(h, ·) = (1, 5.5);
    // ũ(h) = 0.25 + 0.75 · 5.5 = 4.375.
    let out = corrected_advantages(&steps, 3.0, [-10.0, 10.0]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 0);
    let want = [1.0 - 4.375, 5.5 - 4.375];
    for (g, w) in out[0].1.iter().zip(want) {
        assert!((g - w).abs() < 1e-6, "{:?}", out[0].1);
    }
    // A chance node before the opponent's decision with Σ_o p(o) v(h_o) = 0.5: the
    // opponent's ũ = 2.25 becomes 0.5 + 2.25 − v = 0.5 + 2.25 − 1.25 = 1.5, so
    // corr = (1.5 + 1) / 0.5 = 5, ũ(h, ·) = (1, 4), ũ(h) = 3.25.
    let mut with_chance = steps.clone();
    with_chance[1].chance_value = Some(0.5);
    let out = corrected_advantages(&with_chance, 3.0, [-10.0, 10.0]);
    for (g, w) in out[0].1.iter().zip([1.0 - 3.25, 4.0 - 3.25]) {
        assert!((g - w).abs() < 1e-6, "{:?}", out[0].1);
    }
    // Utilities within [−2, 2]: the opponent's ũ = 2.25 is clipped to 2, so
    // corr = (2 + 1) / 0.5 = 6, ũ(h, ·) = (1, 5), ũ(h) = 4, advantages (−3, 1).
    let out = corrected_advantages(&steps, 3.0, [-2.0, 2.0]);
    for (g, w) in out[0].1.iter().zip([-3.0, 1.0]) {
        assert!((g - w).abs() < 1e-6, "{:?}", out[0].1);
    }
    // Advantages within ±1 once the range is [−0.5, 0.5].
    let out = corrected_advantages(&steps, 3.0, [-0.5, 0.5]);
    assert!(out[0].1.iter().all(|x| x.abs() <= 1.0), "{:?}", out[0].1);
}

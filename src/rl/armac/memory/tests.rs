use super::*;
use std::collections::HashMap;

fn step(player: usize, reach: f32, adv: bool) -> Step {
    Step {
        player,
        info: [vec![player as f32, 1.0], vec![2.0, reach]],
        legal: vec![true, true],
        action: 1,
        advantage: adv.then(|| vec![0.5, -0.5]),
        played_policy: (!adv).then(|| vec![0.25, 0.75]),
        reach,
    }
}

fn episode(learning: bool) -> Trajectory {
    Trajectory {
        epoch: 3,
        learning_player: 0,
        learning,
        steps: vec![step(0, 1.0, true), step(1, 0.5, false), step(0, 0.25, true)],
        returns: [1.0, -1.0],
        chance_nodes: 0,
    }
}

/// A 16-sample memory with linear epoch weights whose rows regress on `targets`.
fn small_mean_memory(targets: MemoryTargets) -> Memory {
    Memory::new(16, MemoryWeights::Reach, 3.0)
        .with_epoch_powers(1.0, 1.0)
        .with_targets(targets)
}

/// Row `r` of a batch of two-action memory rows: its tensor, whether it is a regret row,
/// and the target it regresses on.
fn memory_row(tb: &TrainBatch, r: usize) -> (&[f32], bool, &[f32]) {
    let is_regret = tb.regret_weight[r] > 0.0;
    let targets = if is_regret {
        &tb.regret_target
    } else {
        &tb.policy_target
    };
    (
        &tb.own[2 * r..2 * r + 2],
        is_regret,
        &targets[2 * r..2 * r + 2],
    )
}

/// A learning episode of epoch `epoch` whose `k`-th decision sits at state `state(k)` (its
/// tensor `[state, 1]`) with a random target.
fn noisy_episode(epoch: u64, state: impl Fn(usize) -> usize, rng: &mut SplitMix64) -> Trajectory {
    let mut ep = episode(true);
    ep.epoch = epoch;
    for (k, s) in ep.steps.iter_mut().enumerate() {
        s.info[s.player] = vec![state(k) as f32, 1.0];
        let x = rng.next_f64() as f32 * 2.0 - 1.0;
        if let Some(a) = &mut s.advantage {
            *a = vec![x, -0.5 * x];
        }
        if let Some(p) = &mut s.played_policy {
            *p = vec![(x + 1.0) / 2.0, (1.0 - x) / 2.0];
        }
    }
    ep
}

#[test]
fn learning_decisions_split_into_the_two_reservoirs_with_reach_weights() {
    let mut rng = SplitMix64::new(1);
    let mut m = Memory::new(8, MemoryWeights::Reach, 3.0);
    m.add(&episode(false), &mut rng);
    assert!(m.regret.is_empty() && m.policy.is_empty());
    m.add(&episode(true), &mut rng);
    assert_eq!((m.regret.len(), m.policy.len()), (2, 1));
    // 1/reach, clipped at 3.
    let w: Vec<f32> = m.regret.items().iter().map(|s| m.weight(s, true)).collect();
    assert_eq!(w, vec![1.0, 3.0]);
    assert_eq!(m.weight(&m.policy.items()[0], false), 2.0);
    let flat = Memory::new(8, MemoryWeights::None, 3.0);
    assert_eq!(flat.weight(&m.regret.items()[1], true), 1.0);
    // Epoch weights (e + 1)^γ on top of the reach weight; the episode is from epoch 3.
    assert!(m.regret.items().iter().all(|s| s.epoch == 3));
    let linear = Memory::new(8, MemoryWeights::Reach, 3.0).with_epoch_powers(1.0, 2.0);
    assert_eq!(linear.weight(&m.regret.items()[1], true), 3.0 * 4.0);
    assert_eq!(linear.weight(&m.policy.items()[0], false), 2.0 * 16.0);

    let mut tb = TrainBatch::new();
    m.push_rows(&mut tb, 4, &mut rng);
    assert_eq!(tb.rows(), 8);
    for r in 0..8 {
        assert_eq!(tb.critic_weight[r], 0.0);
        assert_eq!(tb.immediate_weight[r], 0.0);
        let regret_row = r < 4;
        assert_eq!(tb.regret_weight[r] > 0.0, regret_row);
        assert_eq!(tb.policy_weight[r] > 0.0, !regret_row);
        if regret_row {
            assert_eq!(&tb.regret_target[2 * r..2 * r + 2], &[0.5, -0.5]);
        } else {
            assert_eq!(tb.policy_weight[r], 2.0);
            assert_eq!(&tb.policy_target[2 * r..2 * r + 2], &[0.25, 0.75]);
            // The opponent's own tensor is its input.
            assert_eq!(&tb.own[2 * r..2 * r + 2], &[2.0, 0.5]);
        }
    }
}

/// Weighted sampling draws each sample in proportion to its weight (reach 1 against
/// clipped reach 3 here, times linear epoch weights 4 against 8) and weighs every row 1.
#[test]
fn weighted_sampling_draws_rows_in_proportion_to_their_weights() {
    let mut rng = SplitMix64::new(4);
    let mut m = Memory::new(8, MemoryWeights::Reach, 3.0)
        .with_epoch_powers(1.0, 0.0)
        .with_sampling(MemorySampling::Weighted);
    m.add(&episode(true), &mut rng);
    let mut late = episode(true);
    late.epoch = 7;
    late.steps.truncate(1);
    m.add(&late, &mut rng);
    // Regret samples: reach 1 at epoch 3 (weight 4), reach 1/4 clipped to 3 at epoch 3
    // (12), reach 1 at epoch 7 (8).
    let want: Vec<f32> = m.regret.items().iter().map(|s| m.weight(s, true)).collect();
    let mut wanted = want.clone();
    wanted.sort_by(f32::total_cmp);
    assert_eq!(wanted, vec![4.0, 8.0, 12.0]);
    // Tell the samples apart by their tensors.
    for (k, s) in m.regret.items_mut().iter_mut().enumerate() {
        s.step.info[0] = vec![k as f32, -1.0];
    }
    let mut tb = TrainBatch::new();
    m.push_rows(&mut tb, 24_000, &mut rng);
    let mut counts = [0usize; 3];
    for r in 0..tb.rows() {
        if tb.regret_weight[r] > 0.0 {
            assert_eq!(tb.regret_weight[r], 1.0);
            let k = m
                .regret
                .items()
                .iter()
                .position(|s| s.step.info[0] == tb.own[2 * r..2 * r + 2])
                .unwrap();
            counts[k] += 1;
        }
    }
    assert_eq!(counts.iter().sum::<usize>(), 24_000);
    for (c, w) in counts.iter().zip(&want) {
        let share = *c as f64 / 24_000.0;
        assert!(
            (share - f64::from(*w) / 24.0).abs() < 0.015,
            "{counts:?} {want:?}"
        );
    }
}

#[test]
fn memory_round_trips_and_names_the_bad_part() {
    let mut rng = SplitMix64::new(2);
    let mut m = Memory::new(2, MemoryWeights::Reach, 20.0);
    for _ in 0..3 {
        m.add(&episode(true), &mut rng);
    }
    assert_eq!((m.regret.seen(), m.policy.seen()), (6, 3));
    let [(rb, rs), (pb, ps)] = m.encode(2, 2);
    let mut back = Memory::new(2, MemoryWeights::Reach, 20.0);
    back.decode([(&rb, rs), (&pb, ps)], 2, 2).unwrap();
    assert_eq!(format!("{:?}", back.regret), format!("{:?}", m.regret));
    assert_eq!(format!("{:?}", back.policy), format!("{:?}", m.policy));
    let mut bad = pb.clone();
    bad[12] ^= 1;
    let e = back.decode([(&rb, rs), (&bad, ps)], 2, 2).unwrap_err();
    assert!(e.contains("average-policy memory"), "{e}");
    let e = back.decode([(&rb, 1), (&pb, ps)], 2, 2).unwrap_err();
    assert!(e.contains("regret memory"), "{e}");
}

/// Mean targets: each row carries the weighted mean of the targets held at its state
/// (checked by brute force after many evictions), and the sums rebuilt from a checkpoint's
/// samples equal the ones kept incrementally, bit for bit.
#[test]
fn mean_targets_follow_the_samples_held_and_survive_a_round_trip() {
    let make = || small_mean_memory(MemoryTargets::InfosetMean);
    let mut rng = SplitMix64::new(9);
    let mut m = make();
    for e in 0..200u64 {
        let ep = noisy_episode(e % 7, |k| (e as usize + k) % 3, &mut rng);
        m.add(&ep, &mut rng);
    }
    assert_eq!((m.regret.seen(), m.policy.seen()), (400, 200));
    let brute = |is_regret: bool, own: &[f32]| -> Vec<f64> {
        let res = if is_regret { &m.regret } else { &m.policy };
        let same: Vec<&Sample> = res
            .items()
            .iter()
            .filter(|o| o.step.info[o.step.player] == own)
            .collect();
        let w: f64 = same.iter().map(|o| f64::from(m.weight(o, is_regret))).sum();
        (0..2)
            .map(|a| {
                same.iter()
                    .map(|o| f64::from(m.weight(o, is_regret)) * f64::from(target(&o.step)[a]))
                    .sum::<f64>()
                    / w
            })
            .collect()
    };
    let mut tb = TrainBatch::new();
    m.push_rows(&mut tb, 64, &mut rng);
    assert_eq!(tb.rows(), 128);
    let mut differs = 0;
    for r in 0..tb.rows() {
        let (own, is_regret, got) = memory_row(&tb, r);
        for (g, w) in got.iter().zip(brute(is_regret, own)) {
            assert!((f64::from(*g) - w).abs() < 1e-6, "row {r}: {got:?}");
        }
        // The mean is not the row's own sample (several samples per state, random
        // targets).
        let res = if is_regret { &m.regret } else { &m.policy };
        differs += usize::from(
            !res.items()
                .iter()
                .any(|o| o.step.info[o.step.player] == own && target(&o.step) == got),
        );
    }
    assert!(differs > 100, "{differs}");
    let states = m.distinct_states().unwrap();
    assert!(states.iter().all(|&n| (1..=3).contains(&n)), "{states:?}");

    let [(rb, rs), (pb, ps)] = m.encode(2, 2);
    let mut back = make();
    back.decode([(&rb, rs), (&pb, ps)], 2, 2).unwrap();
    for (a, b) in m
        .means
        .as_ref()
        .unwrap()
        .iter()
        .zip(back.means.as_ref().unwrap())
    {
        assert_eq!(a.map.len(), b.map.len());
        for (k, e) in &a.map {
            let f = &b.map[k];
            assert_eq!((&e.sums, e.weight, e.count), (&f.sums, f.weight, f.count));
        }
    }
    // Sample targets leave the rows alone.
    let plain = Memory::new(16, MemoryWeights::Reach, 3.0);
    assert_eq!(plain.distinct_states(), None);
}

/// Files of the first format (no epochs) still load, with epoch 0.
#[test]
fn first_format_memory_files_load_with_epoch_zero() {
    let mut rng = SplitMix64::new(3);
    let mut m = Memory::new(4, MemoryWeights::Reach, 20.0);
    m.add(&episode(true), &mut rng);
    let [(rb, _), _] = m.encode(2, 2);
    // Rewrite as the first format: drop each record's trailing epoch, new checksum.
    let per_v2 = 10 + 2 + 4 * (2 + 1 + 2);
    let body = &rb[..rb.len() - 8];
    let mut v1 = b"ARMACMM1".to_vec();
    v1.extend_from_slice(&body[8..32]);
    for rec in body[32..].chunks_exact(per_v2) {
        v1.extend_from_slice(&rec[..per_v2 - 4]);
    }
    let sum = crate::util::fnv1a(&v1);
    v1.extend_from_slice(&sum.to_le_bytes());
    let back = decode_samples(&v1, 2, 2).unwrap();
    assert_eq!(back.len(), m.regret.len());
    for (b, a) in back.iter().zip(m.regret.items()) {
        assert_eq!(format!("{:?}", b.step), format!("{:?}", a.step));
        assert_eq!(b.epoch, 0);
    }
}

/// The device rows of a memory ([`Memory::resident_step`]): the first step carries every
/// slot held, later ones the slots that changed; the draw is [`Memory::push_rows`]'s (same
/// slots, weights and rows from the same generator).
#[test]
fn resident_steps_carry_the_changed_slots_and_push_rows_draw() {
    let mut rng = SplitMix64::new(4);
    let mut m = Memory::new(6, MemoryWeights::Reach, 3.0)
        .with_epoch_powers(1.0, 0.0)
        .with_sampling(MemorySampling::Weighted);
    for e in 0..3 {
        m.add(&noisy_episode(e, |k| k, &mut rng), &mut rng);
    }
    assert!(m.supports_device_rows());
    m.track_changes();
    let width = 2 + 2 * 2;
    let mut seen: [Vec<Vec<f32>>; 2] = [vec![Vec::new(); 6], vec![Vec::new(); 6]];
    for round in 0..4 {
        let (mut r1, mut r2) = (SplitMix64::new(round), SplitMix64::new(round));
        let step = m.resident_step(5, &mut r1, 2, 2);
        let mut tb = TrainBatch::default();
        m.push_rows(&mut tb, 5, &mut r2);
        assert_eq!(r1.next_u64(), r2.next_u64(), "the same draws");
        let held = [m.regret.len(), m.policy.len()];
        for k in 0..2 {
            let u = &step.updates[k];
            if round == 0 {
                assert_eq!(u.slots, (0..held[k]).collect::<Vec<_>>());
            }
            for (i, &slot) in u.slots.iter().enumerate() {
                seen[k][slot] = u.rows[i * width..(i + 1) * width].to_vec();
            }
        }
        // Every drawn row, rebuilt from the rows sent so far, is the one push_rows appended.
        let mut r = 0;
        for (k, (draw, table)) in step.draws.iter().zip(&seen).enumerate() {
            for (&slot, &w) in draw.slots.iter().zip(&draw.weights) {
                let row = &table[slot];
                assert_eq!(row.len(), width, "slot {slot} of table {k} was sent");
                let (own, is_regret, target) = memory_row(&tb, r);
                assert_eq!((own, is_regret), (&row[..2], k == 0));
                assert_eq!(target, &row[4..]);
                let tw = if k == 0 {
                    tb.regret_weight[r]
                } else {
                    tb.policy_weight[r]
                };
                assert_eq!(tw, w);
                r += 1;
            }
        }
        assert_eq!(r, tb.rows());
        // More data: the reservoirs (6 slots) are full, so new samples replace some slots.
        m.add(&noisy_episode(3 + round, |k| 10 + k, &mut rng), &mut rng);
    }
    let next = m.resident_step(1, &mut rng, 2, 2);
    let again = m.resident_step(1, &mut rng, 2, 2);
    assert!(again.updates.iter().all(|u| u.slots.is_empty()), "{next:?}");
}

#[test]
fn all_seen_mean_targets_keep_evicted_samples_and_survive_a_round_trip() {
    let make = || small_mean_memory(MemoryTargets::InfosetMeanAll);
    let mut rng = SplitMix64::new(11);
    let mut m = make();
    // (regret?, tensor) -> (weight, target) of every sample offered since the state was
    // last held nowhere.
    type Offered = Vec<(f64, Vec<f64>)>;
    let mut offered: HashMap<(bool, Vec<u32>), Offered> = HashMap::new();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    for e in 0..300u64 {
        let ep = noisy_episode(e % 5, |k| (e as usize * 7 + k) % 4, &mut rng);
        for s in &ep.steps {
            let is_regret = s.advantage.is_some();
            let sample = slim(s, ep.epoch as u32);
            let w = f64::from(m.weight(&sample, is_regret));
            let t = target(&sample.step).iter().map(|&y| f64::from(y)).collect();
            offered
                .entry((is_regret, bits(&s.info[s.player])))
                .or_default()
                .push((w, t));
        }
        m.add(&ep, &mut rng);
        offered.retain(|(is_regret, own), _| {
            let res = if *is_regret { &m.regret } else { &m.policy };
            res.items()
                .iter()
                .any(|o| bits(&o.step.info[o.step.player]) == *own)
        });
    }
    assert_eq!((m.regret.seen(), m.policy.seen()), (600, 300));
    let kept: usize = offered.values().map(Vec::len).sum();
    assert!(
        kept > 400,
        "most offered samples count ({kept}), 32 are held"
    );
    let mut tb = TrainBatch::new();
    m.push_rows(&mut tb, 64, &mut rng);
    assert_eq!(tb.rows(), 128);
    for r in 0..tb.rows() {
        let (own, is_regret, got) = memory_row(&tb, r);
        let all = &offered[&(is_regret, bits(own))];
        let w: f64 = all.iter().map(|(w, _)| w).sum();
        for (a, g) in got.iter().enumerate() {
            let want = all.iter().map(|(w, t)| w * t[a]).sum::<f64>() / w;
            assert!((f64::from(*g) - want).abs() < 1e-6, "row {r}: {got:?}");
        }
    }

    let [(rb, rs), (pb, ps)] = m.encode(2, 2);
    let means = m.encode_means().expect("all-seen means are saved");
    let mut back = make();
    back.decode([(&rb, rs), (&pb, ps)], 2, 2).unwrap();
    back.decode_means(&means).unwrap();
    assert_eq!(back.encode_means().unwrap(), means);
    let (mut ta, mut tb2) = (TrainBatch::new(), TrainBatch::new());
    m.push_rows(&mut ta, 32, &mut SplitMix64::new(5));
    back.push_rows(&mut tb2, 32, &mut SplitMix64::new(5));
    assert_eq!(ta.regret_target, tb2.regret_target);
    assert_eq!(ta.policy_target, tb2.policy_target);
    // The other targets save nothing.
    let held = Memory::new(16, MemoryWeights::Reach, 3.0).with_targets(MemoryTargets::InfosetMean);
    assert_eq!(held.encode_means(), None);
    // Corrupt bytes, and sums that belong to other samples.
    let mut bad = means.clone();
    bad[20] ^= 1;
    let e = back.decode_means(&bad).unwrap_err();
    assert!(e.contains("checksum"), "{e}");
    let e = make().decode_means(&means).unwrap_err();
    assert!(e.contains("do not match"), "{e}");
    let e = back.decode_means(&rb).unwrap_err();
    assert!(e.contains("bad magic"), "{e}");
}

//! Tests of the plain kernels: the kernels themselves, and every plain path against burn's
//! forward (feed-forward, recurrent, with and without an input scale).

use super::*;
use crate::nn::armac::batch::ActBatch;
use crate::nn::armac::config::ArmacNetConfig;
use crate::nn::armac::policy_net::ArmacPolicyNet;
use crate::nn::armac::policy_net::RecurrentState;
use crate::util::SplitMix64;

#[test]
fn fast_tanh_and_sigmoid_are_within_1e6_of_libm() {
    let mut worst = (0.0f64, 0.0f64);
    for i in -200_000..=200_000 {
        let x = i as f64 * 1e-4; // [-20, 20]
        let t = (fast_tanh(x as f32) as f64 - x.tanh()).abs();
        let s = (fast_sigmoid(x as f32) as f64 - 1.0 / (1.0 + (-x).exp())).abs();
        worst = (worst.0.max(t), worst.1.max(s));
    }
    assert!(worst.0 < 1e-6 && worst.1 < 1e-6, "max errors {worst:?}");
    assert_eq!(fast_tanh(0.0), 0.0);
    assert!(fast_tanh(1e4) <= 1.0 && fast_tanh(-1e4) >= -1.0);
    assert!(fast_tanh(f32::INFINITY) <= 1.0);
}

#[test]
fn matmul_matches_a_naive_triple_loop() {
    let mut rng = SplitMix64::new(7);
    for &(m, k, n) in &[(1, 1, 1), (3, 5, 7), (17, 33, 9), (64, 40, 130)] {
        // `a` is the left `k` columns of an `m × (k + 3)` matrix: the strided product
        // must read those columns only.
        let lda = k + 3;
        let wide = rng.symmetric_vec_f32(m * lda, 1.0);
        let a: Vec<f32> = wide
            .chunks_exact(lda)
            .flat_map(|r| r[..k].to_vec())
            .collect();
        let b = rng.symmetric_vec_f32(k * n, 1.0);
        let c0 = rng.symmetric_vec_f32(m * n, 1.0);
        let mut c = c0.clone();
        matmul(&mut c, &a, &b, m, k, n);
        let mut cs = c0.clone();
        matmul_strided(&mut cs, &wide, lda, &b, m, k, n);
        for i in 0..m {
            for j in 0..n {
                let mut want = c0[i * n + j] as f64;
                for t in 0..k {
                    want += a[i * k + t] as f64 * b[t * n + j] as f64;
                }
                for got in [c[i * n + j], cs[i * n + j]] {
                    let got = got as f64;
                    assert!(
                        (got - want).abs() < 1e-4,
                        "{m}x{k}x{n} ({i},{j}): {got} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn sparse_and_dense_linear_agree() {
    let mut rng = SplitMix64::new(3);
    let layer = PlainLinear {
        d_in: 20,
        d_out: 12,
        w: rng.symmetric_vec_f32(240, 1.0),
        b: rng.symmetric_vec_f32(12, 1.0),
    };
    let mut x = rng.symmetric_vec_f32(5 * 20, 1.0);
    for (i, v) in x.iter_mut().enumerate() {
        if i % 3 != 0 {
            *v = 0.0;
        }
    }
    let (mut dense, mut sparse) = (Vec::new(), Vec::new());
    layer.forward(&x, 5, &mut dense);
    layer.forward_sparse(&x, 5, &mut sparse);
    for (d, s) in dense.iter().zip(&sparse) {
        assert!((d - s).abs() < 1e-5, "{d} vs {s}");
    }
}

/// Random observation-like rows: mostly zeros, a few ones and a few real values.
fn sparse_rows(rng: &mut SplitMix64, rows: usize, width: usize) -> Vec<f32> {
    (0..rows * width)
        .map(|_| match rng.below(10) {
            0 => 1.0,
            1 => rng.symmetric_vec_f32(1, 2.0)[0],
            _ => 0.0,
        })
        .collect()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn legal_rows(rng: &mut SplitMix64, rows: usize, a: usize) -> Vec<f32> {
    let mut legal = vec![0.0; rows * a];
    for r in 0..rows {
        for x in 0..a {
            legal[r * a + x] = (x == 0 || rng.below(2) == 1) as u8 as f32;
        }
    }
    legal
}

/// The plain kernels against burn's forward on random weights (the FCPA widths: input 108,
/// Linear(256) -> DoubleReLU -> LSTM(256), blocks of 128, four actions), random sparse and
/// dense observations, zero and random states, several steps chained.
#[test]
fn plain_recurrent_step_and_head_match_burn() {
    let (n_in, a) = (108, 4);
    let cfg = ArmacNetConfig::new(n_in, a)
        .with_encoder_hidden(128)
        .with_head_hidden(128)
        .with_recurrent(true);
    let net = ArmacPolicyNet::init(cfg, 11).unwrap();
    let plain = PlainRangeNet::new(&net);
    let h = net.config().representation_size();
    let mut rng = SplitMix64::new(5);
    for rows in [1usize, 7, 300] {
        let mut st_burn = RecurrentState {
            rows,
            hidden: vec![0.0; rows * h],
            cell: vec![0.0; rows * h],
        };
        let mut st_plain = st_burn.clone();
        for step in 0..6 {
            let obs = match step % 3 {
                0 => sparse_rows(&mut rng, rows, n_in),
                1 => rng.symmetric_vec_f32(rows * n_in, 1.5),
                // As in a range query: one sparse row whose "hole cards" (two one-hot
                // entries among 2..54) change from row to row.
                _ => {
                    let base = sparse_rows(&mut rng, 1, n_in);
                    let mut obs = Vec::new();
                    for _ in 0..rows {
                        let mut row = base.clone();
                        row[2..54].fill(0.0);
                        row[2 + rng.below(52)] = 1.0;
                        row[2 + rng.below(52)] = 1.0;
                        obs.extend(row);
                    }
                    obs
                }
            };
            st_burn = net.encoder_step(&obs, &st_burn).unwrap();
            st_plain = plain.encoder_step(&obs, &st_plain).unwrap();
            let dh = max_diff(&st_burn.hidden, &st_plain.hidden);
            let dc = max_diff(&st_burn.cell, &st_plain.cell);
            assert!(dh < 1e-5 && dc < 1e-5, "rows {rows} step {step}: {dh} {dc}");
            // The plain step from burn's state: no drift hidden by chaining.
            assert!(st_burn.hidden.iter().any(|&v| v.abs() > 1e-3));
            let legal = legal_rows(&mut rng, rows, a);
            let pb = net.avg_policy_head(&st_burn.hidden, &legal, rows).unwrap();
            let pp = plain
                .avg_policy_head(&st_burn.hidden, &legal, rows)
                .unwrap();
            let dp = max_diff(&pb, &pp);
            assert!(dp < 1e-5, "rows {rows} step {step}: head {dp}");
            for (p, l) in pp.iter().zip(&legal) {
                if *l == 0.0 {
                    assert_eq!(*p, 0.0);
                }
            }
        }
        // A random (non-zero) starting state, as kept states are.
        let st = RecurrentState {
            rows,
            hidden: rng.symmetric_vec_f32(rows * h, 0.9),
            cell: rng.symmetric_vec_f32(rows * h, 3.0),
        };
        let obs = sparse_rows(&mut rng, rows, n_in);
        let b = net.encoder_step(&obs, &st).unwrap();
        let p = plain.encoder_step(&obs, &st).unwrap();
        assert!(max_diff(&b.hidden, &p.hidden) < 1e-5 && max_diff(&b.cell, &p.cell) < 1e-5);
    }
    // Bad input is refused like burn's path does.
    let st = RecurrentState {
        rows: 2,
        hidden: vec![0.0; 2 * h],
        cell: vec![0.0; 2 * h],
    };
    assert!(plain.encoder_step(&[0.0; 5], &st).is_err());
    assert!(plain.avg_policy_head(&[0.0; 5], &[1.0; 8], 2).is_err());
    assert!(plain.avg_policy(&[0.0; 2 * 108], &[1.0; 8], 2).is_err());
}

/// `input_scale`: a net given raw inputs reads them divided by the scale, in burn's
/// forward and in the plain kernels alike (feed-forward with a shared and a separate
/// regret encoder, and recurrent): the same outputs as the unscaled net of the same seed
/// on inputs divided beforehand; a bad scale is refused.
#[test]
fn input_scale_divides_the_inputs_everywhere() {
    let (n_in, a) = (40, 3);
    let mut rng = SplitMix64::new(21);
    let scale: Vec<f32> = (0..n_in)
        .map(|i| if i % 3 == 0 { 20000.0 } else { 1.0 })
        .collect();
    let raw = |rng: &mut SplitMix64, rows: usize| -> Vec<f32> {
        let mut x = sparse_rows(rng, rows, n_in);
        for (i, v) in x.iter_mut().enumerate() {
            *v *= scale[i % n_in];
        }
        x
    };
    let divided = |x: &[f32]| -> Vec<f32> {
        x.iter()
            .enumerate()
            .map(|(i, v)| v / scale[i % n_in])
            .collect()
    };
    for separate in [false, true] {
        let base = ArmacNetConfig::new(n_in, a)
            .with_encoder_hidden(24)
            .with_head_hidden(16)
            .with_separate_regret_encoder(separate);
        let scaled = ArmacPolicyNet::init(base.clone().with_input_scale(scale.clone()), 4);
        let (scaled, plain_net) = (scaled.unwrap(), ArmacPolicyNet::init(base, 4).unwrap());
        let (ps, pn) = (PlainRangeNet::new(&scaled), PlainRangeNet::new(&plain_net));
        let rows = 30;
        let x = raw(&mut rng, rows);
        let legal = legal_rows(&mut rng, rows, a);
        let want = plain_net.avg_policy(&divided(&x), &legal, rows).unwrap();
        let got = scaled.avg_policy(&x, &legal, rows).unwrap();
        assert!(max_diff(&want, &got) < 1e-5, "{}", max_diff(&want, &got));
        let got = ps.avg_policy(&x, &legal, rows).unwrap();
        assert!(max_diff(&want, &got) < 1e-5, "{}", max_diff(&want, &got));
        let want = pn.current_policy(&divided(&x), &legal, rows).unwrap();
        let got = ps.current_policy(&x, &legal, rows).unwrap();
        assert!(max_diff(&want, &got) < 1e-5, "{}", max_diff(&want, &got));
        // Not the same as reading the raw inputs.
        let raw_reading = pn.avg_policy(&x, &legal, rows).unwrap();
        let d = max_diff(&raw_reading, &ps.avg_policy(&x, &legal, rows).unwrap());
        assert!(d > 1e-3, "{d}");
    }
    let base = ArmacNetConfig::new(n_in, a)
        .with_encoder_hidden(16)
        .with_head_hidden(16)
        .with_recurrent(true);
    let scaled = ArmacPolicyNet::init(base.clone().with_input_scale(scale.clone()), 6);
    let (scaled, plain_net) = (scaled.unwrap(), ArmacPolicyNet::init(base, 6).unwrap());
    let ps = PlainRangeNet::new(&scaled);
    let h = scaled.config().representation_size();
    let rows = 5;
    let st = RecurrentState {
        rows,
        hidden: vec![0.0; rows * h],
        cell: vec![0.0; rows * h],
    };
    let x = raw(&mut rng, rows);
    let want = plain_net.encoder_step(&divided(&x), &st).unwrap();
    for got in [
        scaled.encoder_step(&x, &st).unwrap(),
        ps.encoder_step(&x, &st).unwrap(),
    ] {
        assert!(max_diff(&want.hidden, &got.hidden) < 1e-5);
        assert!(max_diff(&want.cell, &got.cell) < 1e-5);
    }
    for bad in [vec![1.0; n_in - 1], {
        let mut v = vec![1.0; n_in];
        v[7] = 0.0;
        v
    }] {
        let cfg = ArmacNetConfig::new(n_in, a).with_input_scale(bad);
        let err = ArmacPolicyNet::init(cfg, 1).expect_err("refused");
        assert!(err.to_string().contains("input_scale"), "{err}");
    }
}

/// Feed-forward nets, shared and separate mean-regret encoders: the plain average policy
/// and current policy against burn's `avg_policy` and `evaluate` (`current_policy` per row).
#[test]
fn plain_feed_forward_policy_matches_burn() {
    let (n_in, a) = (60, 3);
    for separate in [false, true] {
        let cfg = ArmacNetConfig::new(n_in, a)
            .with_encoder_hidden(48)
            .with_encoder_layers(2)
            .with_head_hidden(32)
            .with_separate_regret_encoder(separate);
        let net = ArmacPolicyNet::init(cfg, 2).unwrap();
        let plain = PlainRangeNet::new(&net);
        let mut rng = SplitMix64::new(9);
        let mut gap = 0.0f32;
        for rows in [1usize, 50] {
            let info = sparse_rows(&mut rng, rows, n_in);
            let legal = legal_rows(&mut rng, rows, a);
            let pb = net.avg_policy(&info, &legal, rows).unwrap();
            let pp = plain.avg_policy(&info, &legal, rows).unwrap();
            assert!(max_diff(&pb, &pp) < 1e-5, "{}", max_diff(&pb, &pp));

            let cp = plain.current_policy(&info, &legal, rows).unwrap();
            let mut batch = ActBatch::default();
            let masks: Vec<Vec<bool>> = legal
                .chunks(a)
                .map(|l| l.iter().map(|&x| x > 0.0).collect())
                .collect();
            for (row, mask) in info.chunks(n_in).zip(&masks) {
                batch.push(row, row, row, mask);
            }
            let out = net.evaluate(&batch);
            let cb: Vec<f32> = (0..rows)
                .flat_map(|i| out.current_policy(i, &masks[i]))
                .collect();
            let d = max_diff(&cb, &cp);
            assert!(d < 1e-5, "separate {separate} rows {rows}: current {d}");
            // A distribution over the legal actions, different from the average policy.
            for (row, l) in cp.chunks(a).zip(legal.chunks(a)) {
                let sum: f32 = row.iter().sum();
                assert!((sum - 1.0).abs() < 1e-5, "{sum}");
                for (p, l) in row.iter().zip(l) {
                    assert!(*l > 0.0 || *p == 0.0);
                }
            }
            gap = gap.max(max_diff(&cp, &pp));
        }
        assert!(gap > 1e-3, "current equals average");
        let st = RecurrentState::default();
        assert!(
            plain.encoder_step(&[], &st).is_err(),
            "feed-forward nets refuse steps"
        );
        assert!(plain.current_policy(&[0.0; 5], &[1.0; 3], 1).is_err());
    }
    let rec = ArmacNetConfig::new(n_in, a)
        .with_encoder_hidden(16)
        .with_head_hidden(16)
        .with_recurrent(true);
    let plain = PlainRangeNet::new(&ArmacPolicyNet::init(rec, 1).unwrap());
    let err = plain
        .current_policy(&[0.0; 60], &[1.0; 3], 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("feed-forward"), "{err}");
}

use super::*;
use crate::games::load_game;
use crate::search::features::ValueExamples;
use crate::search::{
    GtCfrConfig, LeafValues, Pbs, PbsEncoder, ResolverConfig, SearchLabels, SearchPolicy,
    SubgameOracle,
};
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use std::sync::Arc;

fn leduc_encoder() -> (PbsEncoder, Arc<PublicTree>, Arc<HistoryTree>, usize) {
    let game = load_game("leduc_poker").unwrap();
    let na = game.num_distinct_actions();
    let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
    (
        PbsEncoder::new(game, tree.clone(), ht.clone()).unwrap(),
        tree,
        ht,
        na,
    )
}

fn config(enc: &PbsEncoder, na: usize, hidden: usize) -> CvpnConfig {
    CvpnConfig {
        game: "leduc_poker".into(),
        input_size: enc.input_size(),
        private_states: enc.private_states(),
        num_actions: na,
        hidden,
        layers: 2,
    }
}

/// A broadcast snapshot predicts what its network does; a checkpoint loads back to the same
/// predictions and step count; a checkpoint loaded as another game's or another size's
/// network is refused with an error naming the file and both configurations.
#[test]
fn snapshots_and_checkpoints_predict_alike_and_other_configs_are_refused() {
    let (mut enc, _, _, na) = leduc_encoder();
    let device = crate::nn::select_device("flex").unwrap();
    let mut net = Cvpn::new(config(&enc, na, 16), &device, 1e-3, 9).unwrap();
    let q = enc.random_queries(&mut SplitMix64::new(1), 4);
    let input: Vec<f32> = q
        .iter()
        .flat_map(|q| enc.encode(q).unwrap().input)
        .collect();
    let mut b = CvpnBatch::default();
    b.input.clone_from(&input);
    let p2 = 2 * enc.private_states();
    b.values = vec![0.5; 4 * p2];
    b.value_mask = vec![1.0; 4 * p2];
    net.train_step(&b).unwrap();
    let snap = net.snapshot();
    assert_eq!(snap.version, 1);
    assert_eq!(snap.predict(&input).unwrap(), net.predict(&input).unwrap());
    // The value-only forward of leaf evaluation gives the values of the full forward.
    assert_eq!(
        snap.predict_values(&input).unwrap(),
        snap.predict(&input).unwrap().0
    );
    let dir = std::env::temp_dir().join(format!("armac_cvpn_ckpt_{}", std::process::id()));
    net.save(&dir).unwrap();
    let back = Cvpn::load(&dir, &config(&enc, na, 16), &device, 1e-3).unwrap();
    assert_eq!(back.steps(), 1);
    assert_eq!(back.predict(&input).unwrap(), net.predict(&input).unwrap());
    // The half-precision policy export: no optimizer file, and predictions within f16
    // rounding of the full network's (but not all equal: the weights were rounded).
    let half_dir = dir.join("half");
    net.save_weights_f16(&half_dir).unwrap();
    assert!(!half_dir.join(CVPN_OPTIMIZER_FILE).exists());
    let half = Cvpn::load(&half_dir, &config(&enc, na, 16), &device, 1e-3).unwrap();
    assert_eq!(half.steps(), 1);
    let (full_v, _) = net.predict(&input).unwrap();
    let (half_v, _) = half.predict(&input).unwrap();
    let worst = full_v
        .iter()
        .zip(&half_v)
        .map(|(a, b)| (a - b).abs() / a.abs().max(1e-3))
        .fold(0.0f32, f32::max);
    assert!(worst > 0.0 && worst < 1e-2, "f16 relative error {worst}");
    let mut kuhn = config(&enc, na, 16);
    kuhn.game = "kuhn_poker".into();
    for (what, cfg) in [("game", kuhn), ("size", config(&enc, na, 32))] {
        let e = Cvpn::load(&dir, &cfg, &device, 1e-3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(CVPN_META_FILE) && e.contains("recorded") && e.contains("expected"),
            "{what}: {e}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The zero-sum correction: an untrained net's answers break the zero-sum identity
/// `Σ_x r_0(x)·v_0(x) + Σ_y r_1(y)·v_1(y) = 0`; corrected answers satisfy it (1e-9 of the
/// values' size) on random Leduc PBSs, and values stay 0 where the opponent has no mass.
#[test]
fn zero_sum_correction_makes_range_weighted_values_cancel() {
    let (mut enc, _, _, na) = leduc_encoder();
    let device = crate::nn::select_device("flex").unwrap();
    let net = Cvpn::new(config(&enc, na, 16), &device, 1e-3, 21).unwrap();
    let qs = enc.random_queries(&mut SplitMix64::new(4), 64);
    let masses: Vec<_> = qs.iter().map(|q| enc.encode(q).unwrap().mass).collect();
    let plain = CvpnLeaves::new(&net, &mut enc).evaluate(&qs).unwrap();
    let fixed = CvpnLeaves::new(&net, &mut enc)
        .with_zero_sum(true)
        .evaluate(&qs)
        .unwrap();
    let gap = |q: &Pbs, v: &[Vec<f64>; 2]| -> (f64, f64) {
        let mut sum = 0.0;
        let mut size = 0.0f64;
        for (range, vals) in q.ranges.iter().zip(v) {
            for (r, x) in range.iter().zip(vals) {
                sum += r * x;
                size = size.max(x.abs());
            }
        }
        (sum, size)
    };
    let mut broken = 0;
    for ((q, m), (a, b)) in qs.iter().zip(&masses).zip(plain.iter().zip(&fixed)) {
        let (before, size) = gap(q, a);
        let (after, _) = gap(q, b);
        if before.abs() > 1e-6 * size.max(1e-12) {
            broken += 1;
        }
        assert!(
            after.abs() <= 1e-9 * size.max(1.0),
            "{after} vs size {size}"
        );
        for (i, (vals, mass)) in b.iter().zip(m).enumerate() {
            for (x, v) in vals.iter().enumerate() {
                if mass.get(x).is_none_or(|&mm| mm == 0.0) {
                    assert_eq!(*v, 0.0, "player {i} state {x}");
                }
            }
        }
    }
    assert!(
        broken > qs.len() / 2,
        "{broken} of {} answers broke it",
        qs.len()
    );
}

/// Masked mean squared error of `pred` against `data` (and of the zero predictor).
fn mse(pred: &[f32], data: &ValueExamples) -> (f64, f64) {
    let (mut e, mut z, mut n) = (0.0, 0.0, 0.0);
    for ((p, t), m) in pred.iter().zip(&data.values).zip(&data.mask) {
        let m = f64::from(*m);
        e += m * f64::from(p - t).powi(2);
        z += m * f64::from(*t).powi(2);
        n += m;
    }
    (e / n, z / n)
}

fn batch(data: &ValueExamples, rows: &[usize]) -> CvpnBatch {
    let w_in = data.input.len() / data.rows;
    let w_out = data.values.len() / data.rows;
    let mut b = CvpnBatch::default();
    for &r in rows {
        b.input
            .extend_from_slice(&data.input[r * w_in..(r + 1) * w_in]);
        b.values
            .extend_from_slice(&data.values[r * w_out..(r + 1) * w_out]);
        b.value_mask
            .extend_from_slice(&data.mask[r * w_out..(r + 1) * w_out]);
    }
    b
}

/// The CVPN check on oracle-labelled Leduc PBSs (random nodes, ranges of random
/// policies): after training, the held-out MSE of the normalised values is at most 10% of
/// the zero predictor's.
#[test]
fn cvpn_fits_oracle_values_on_leduc() {
    let (mut enc, tree, ht, na) = leduc_encoder();
    let mut oracle = SubgameOracle::new(tree.clone(), ht.clone(), 100).unwrap();
    let mut rng = SplitMix64::new(11);
    let t0 = std::time::Instant::now();
    let (n_train, n_test) = (TRAIN_ROWS, 500);
    let all = enc
        .value_examples(&mut oracle, &mut rng, n_train + n_test)
        .unwrap();
    let labelled = t0.elapsed();
    let (train, test) = (all.slice(0..n_train), all.slice(n_train..n_train + n_test));
    let device = crate::nn::select_device("flex").unwrap();
    let mut net = Cvpn::new(config(&enc, na, 128), &device, 1e-3, 3).unwrap();
    let (before, zero) = mse(&net.predict(&test.input).unwrap().0, &test);
    for _ in 0..TRAIN_STEPS {
        let rows: Vec<usize> = (0..128).map(|_| rng.below(n_train)).collect();
        net.train_step(&batch(&train, &rows)).unwrap();
    }
    let (after, _) = mse(&net.predict(&test.input).unwrap().0, &test);
    eprintln!(
        "CVPN on Leduc: {n_train} train / {n_test} held-out PBSs labelled in {:.1?}, \
         trained {TRAIN_STEPS} steps in {:.1?}; held-out MSE {after:.5} (initial {before:.5}, \
         zero predictor {zero:.5}, ratio {:.3})",
        labelled,
        t0.elapsed() - labelled,
        after / zero
    );
    assert!(after <= 0.1 * zero, "MSE {after} vs zero predictor {zero}");

    // The trained net at the frontier of continual re-solving: the whole-game search
    // policy is far less exploitable than with the untrained net, one forward per batch
    // of frontier queries.
    let untrained = Cvpn::new(config(&enc, na, 128), &device, 1e-3, 3).unwrap();
    let nash_conv = |net: &Cvpn, enc: &mut PbsEncoder| search_nash_conv(net, enc, &tree, &ht);
    let (trained_nc, untrained_nc) = (nash_conv(&net, &mut enc), nash_conv(&untrained, &mut enc));
    assert!(
        trained_nc <= 0.5 * untrained_nc && trained_nc < 1.0,
        "trained {trained_nc} vs untrained {untrained_nc}"
    );
}

/// NashConv of the whole-game search policy (continual re-solving, 50 simulations per
/// search) with `net` at the frontier; checks that frontier queries are batched.
fn search_nash_conv(
    net: &Cvpn,
    enc: &mut PbsEncoder,
    tree: &Arc<PublicTree>,
    ht: &Arc<HistoryTree>,
) -> f64 {
    let resolver = ResolverConfig {
        search: GtCfrConfig {
            simulations: 50,
            ..GtCfrConfig::default()
        },
        ..ResolverConfig::default()
    };
    let t = std::time::Instant::now();
    let mut leaves = CvpnLeaves::new(net, enc);
    let sp = SearchPolicy::build(tree.clone(), ht.clone(), &resolver, &mut leaves).unwrap();
    assert!(leaves.queries > 0 && leaves.forwards > 0);
    assert!(
        leaves.forwards < leaves.queries,
        "one forward per batch of queries"
    );
    let nc = sp.nash_conv().nash_conv;
    eprintln!(
        "search policy (s = 50) with a CVPN after {} steps: NashConv {nc:.4}, {} queries in {} forwards, {:.1?}",
        net.steps(),
        leaves.queries,
        leaves.forwards,
        t.elapsed()
    );
    nc
}

/// Student of Games' value learning without an oracle: random PBSs re-solved by GT-CFR
/// with the current net at the frontier ([`SearchLabels`]) give the targets; values become
/// exact near terminals first and move up round by round. The search policy with the
/// trained net must be at most half as exploitable as with the initial net, and below 1.
#[test]
fn bootstrapped_cvpn_improves_search_without_an_oracle() {
    let (mut enc, tree, ht, na) = leduc_encoder();
    let mut leaf_enc =
        PbsEncoder::new(load_game("leduc_poker").unwrap(), tree.clone(), ht.clone()).unwrap();
    let device = crate::nn::select_device("flex").unwrap();
    let mut net = Cvpn::new(config(&enc, na, 128), &device, 1e-3, 5).unwrap();
    let initial_nc = search_nash_conv(&net, &mut leaf_enc, &tree, &ht);
    let mut rng = SplitMix64::new(13);
    let label_cfg = GtCfrConfig {
        simulations: BOOT_SIMULATIONS,
        ..GtCfrConfig::default()
    };
    let t0 = std::time::Instant::now();
    let mut buffer: Option<ValueExamples> = None;
    for _ in 0..BOOT_ROUNDS {
        let queries = enc.random_queries(&mut rng, BOOT_QUERIES);
        let answers = {
            let mut inner = CvpnLeaves::new(&net, &mut leaf_enc);
            let mut labels = SearchLabels {
                tree: &tree,
                ht: &ht,
                config: label_cfg.clone(),
                inner: &mut inner,
            };
            labels.evaluate(&queries).unwrap()
        };
        let fresh = enc.examples(&queries, &answers).unwrap();
        let data = match buffer.take() {
            None => fresh,
            Some(old) => {
                // FIFO of the last BOOT_BUFFER rows.
                let mut all = old;
                all.rows += fresh.rows;
                all.input.extend(fresh.input);
                all.values.extend(fresh.values);
                all.mask.extend(fresh.mask);
                let keep = all.rows.min(BOOT_BUFFER);
                all.slice(all.rows - keep..all.rows)
            }
        };
        for _ in 0..BOOT_STEPS {
            let rows: Vec<usize> = (0..128).map(|_| rng.below(data.rows)).collect();
            net.train_step(&batch(&data, &rows)).unwrap();
        }
        buffer = Some(data);
    }
    eprintln!(
        "bootstrapped CVPN: {BOOT_ROUNDS} rounds of {BOOT_QUERIES} queries (s = \
         {BOOT_SIMULATIONS}) and {BOOT_STEPS} steps in {:.1?}",
        t0.elapsed()
    );
    let trained_nc = search_nash_conv(&net, &mut leaf_enc, &tree, &ht);
    assert!(
        trained_nc <= 0.5 * initial_nc && trained_nc < 1.0,
        "trained {trained_nc} vs initial {initial_nc}"
    );
}

const BOOT_ROUNDS: usize = 8;
const BOOT_QUERIES: usize = 1000;
const BOOT_SIMULATIONS: usize = 20;
const BOOT_STEPS: usize = 300;
const BOOT_BUFFER: usize = 8000;

const TRAIN_ROWS: usize = 20_000;
const TRAIN_STEPS: usize = 3000;

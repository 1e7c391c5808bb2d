//! ONNX export of the shipped ARMAC models, the cases a second runtime checks: for every ARMAC
//! model in `models/`, 1,000 information states met in random games, and for both heads and
//! the thresholds (the model's own, 0, 0.1, 0.45) the exported graph and the probabilities
//! armac plays there (`ArmacAveragePolicy::tensor_probabilities`).
//!
//! This test writes them under `target/tmp/onnx-cases/` (`<model>-<head>-<threshold>.onnx` and
//! `.case`); `cargo run --release -p armac-onnx-tract -- target/tmp/onnx-cases` then runs every
//! graph in tract and compares (tests/onnx-tract: tract is kept out of armac's own dependency
//! graph, where its features would change the build of the burn stack). CI runs both; pytest
//! checks the same graphs with ONNX Runtime (python/tests/test_onnx.py).
//!
//! Here: every graph decodes with the declared inputs and output, and the cases cover what the
//! graph must get right: states where the threshold removes actions and where no action
//! reaches it.

use armac::game::{GameRef, Turn};
use armac::nn::armac::{ONNX_INPUT_INFO_STATE, ONNX_INPUT_LEGAL_MASK, ONNX_OUTPUT_PROBABILITIES};
use armac::nn::onnx::proto::ModelProto;
use armac::util::SplitMix64;
use prost::Message;
use std::path::{Path, PathBuf};

const STATES: usize = 1000;

/// `ARMACONNXCASE1`, then rows, input size and actions (u64 little-endian), then the f32
/// little-endian information-state tensors, legal masks and armac's probabilities, row-major.
const MAGIC: &[u8] = b"ARMACONNXCASE1";

/// Tensors (`rows × input`) and legal masks (`rows × actions`) of `count` decisions met in
/// random games of `game` (chance outcomes drawn with their probabilities, actions uniformly).
fn sample_states(game: &GameRef, count: usize, seed: u64) -> (Vec<f32>, Vec<bool>) {
    let (n_in, n_a) = (
        game.information_state_tensor_size(),
        game.num_distinct_actions(),
    );
    let mut rng = SplitMix64::new(seed);
    let (mut info, mut legal) = (Vec::new(), Vec::new());
    let mut row = vec![0.0f32; n_in];
    let mut rows = 0;
    while rows < count {
        let mut s = game.new_initial_state();
        while rows < count {
            match s.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    let outcomes = s.chance_outcomes();
                    let w: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
                    s.apply_action(outcomes[rng.weighted(&w)].0);
                }
                Turn::Player(p) => {
                    let actions = s.legal_actions();
                    s.information_state_tensor(p, &mut row);
                    info.extend_from_slice(&row);
                    let mut mask = vec![false; n_a];
                    actions.iter().for_each(|&a| mask[a] = true);
                    legal.extend(mask);
                    rows += 1;
                    s.apply_action(actions[rng.below(actions.len())]);
                }
            }
        }
    }
    (info, legal)
}

/// The ARMAC models under `models/` (the Student of Games model is not a network).
fn armac_models() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("models/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("manifest.json").is_file() && !p.join("checkpoint/cvpn").exists())
        .collect();
    dirs.sort();
    dirs
}

fn write_case(path: &Path, n_in: usize, n_a: usize, info: &[f32], legal: &[bool], probs: &[f64]) {
    let rows = info.len() / n_in;
    let mut bytes = MAGIC.to_vec();
    for v in [rows, n_in, n_a] {
        bytes.extend((v as u64).to_le_bytes());
    }
    let floats = info
        .iter()
        .copied()
        .chain(legal.iter().map(|&l| if l { 1.0 } else { 0.0 }))
        .chain(probs.iter().map(|&p| p as f32));
    for v in floats {
        bytes.extend(v.to_le_bytes());
    }
    std::fs::write(path, bytes).expect("write the case");
}

/// Checks the graph's declared inputs and output.
fn check_signature(bytes: &[u8], n_in: usize, n_a: usize) {
    let model = ModelProto::decode(bytes).expect("the export decodes");
    let graph = model.graph.expect("a graph");
    let names = |v: &[armac::nn::onnx::proto::ValueInfoProto]| -> Vec<String> {
        v.iter().map(|x| x.name.clone()).collect()
    };
    assert_eq!(
        names(&graph.input),
        [ONNX_INPUT_INFO_STATE, ONNX_INPUT_LEGAL_MASK]
    );
    assert_eq!(names(&graph.output), [ONNX_OUTPUT_PROBABILITIES]);
    let meta = |k: &str| {
        model
            .metadata_props
            .iter()
            .find(|p| p.key == k)
            .map(|p| p.value.clone())
    };
    assert_eq!(meta("input_size"), Some(n_in.to_string()));
    assert_eq!(meta("num_actions"), Some(n_a.to_string()));
}

#[test]
fn every_shipped_armac_model_exports_the_cases_tract_checks() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx-cases");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("create the case directory");
    let models = armac_models();
    assert!(
        models.len() >= 4,
        "expected the 4 ARMAC models, found {models:?}"
    );
    for (k, dir) in models.iter().enumerate() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let (game, base) = armac::run::armac::load_checkpoint_policy(dir).expect("loads");
        let own = base.threshold();
        let (n_in, n_a) = (
            game.information_state_tensor_size(),
            game.num_distinct_actions(),
        );
        let (info, legal) = sample_states(&game, STATES, 100 + k as u64);
        let (mut removed, mut none_reach) = (0, 0);
        for current in [false, true] {
            let (_, p) = armac::run::armac::load_checkpoint_policy(dir).expect("loads");
            let raw = p
                .with_current_policy(current)
                .with_threshold(0.0)
                .tensor_probabilities(&info, &legal, STATES)
                .expect("raw probabilities");
            for t in [own, 0.0, 0.1, 0.45] {
                let (_, p) = armac::run::armac::load_checkpoint_policy(dir).expect("loads");
                let p = p.with_current_policy(current).with_threshold(t);
                let probs = p
                    .tensor_probabilities(&info, &legal, STATES)
                    .expect("probabilities");
                let bytes = p.to_onnx().expect("exports");
                check_signature(&bytes, n_in, n_a);
                let head = if current { "current" } else { "average" };
                let stem = format!("{name}-{head}-{t}");
                std::fs::write(out.join(format!("{stem}.onnx")), &bytes).expect("write");
                write_case(
                    &out.join(format!("{stem}.case")),
                    n_in,
                    n_a,
                    &info,
                    &legal,
                    &probs,
                );
                for r in 0..STATES {
                    let row = r * n_a..(r + 1) * n_a;
                    let (raw, probs, legal) = (&raw[row.clone()], &probs[row.clone()], &legal[row]);
                    removed += (0..n_a)
                        .filter(|&a| legal[a] && raw[a] > 0.0 && probs[a] == 0.0)
                        .count();
                    if t > 0.0 && raw.iter().all(|&x| x < t) {
                        none_reach += 1;
                    }
                }
            }
        }
        assert!(
            removed > 0,
            "{name}: no state where the threshold removes an action"
        );
        assert!(
            none_reach > 0,
            "{name}: no state where no action reaches the threshold"
        );
    }
}

//! `armac-onnx-tract DIR`: runs every ONNX policy that armac's `tests/onnx.rs` wrote into `DIR`
//! (`<case>.onnx` beside `<case>.case`) in tract, a second ONNX runtime (pure Rust), and
//! compares its probabilities with the ones armac computed for the same information states.
//! Prints the largest absolute difference of each case; exits with status 1 if one exceeds its
//! tolerance ([`tolerance`]), if a case cannot be read or run, or if `DIR` holds no case.
//!
//! ```sh
//! cargo test --release --test onnx
//! cargo run --release -p armac-onnx-tract -- target/tmp/onnx-cases
//! ```
//!
//! (CI builds it with `--profile ci-tract`: unoptimised, a quarter of the release build's CPU
//! time; the run takes seconds either way.)

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tract_onnx::prelude::*;

/// The largest difference allowed between tract's and armac's probabilities in the case
/// `name` (`<model>-<head>-<threshold>`): 1e-5 for the average policy, 1e-4 for the current
/// policy.
///
/// Both runtimes compute the network in f32 and sum its products in different orders, so their
/// outputs differ by f32 rounding. The average policy's softmax keeps that near 1e-6. Regret
/// matching divides the mean-regret head's positive parts by their sum, which amplifies it
/// where the sum is small: at the worst state of `hunl_fcpa_armac`'s current policy (positive
/// regrets 0.006 and 0.013) armac's own f32 result is 1.5e-5 from the f64 value of the same
/// graph, and tract's 2.5e-5 from armac's (ONNX Runtime, which sums as armac's kernels do,
/// stays within 6e-8 of armac everywhere; python/tests/test_onnx.py holds it to 1e-5).
fn tolerance(name: &str) -> f32 {
    if name.contains("-current-") {
        1e-4
    } else {
        1e-5
    }
}

/// The header of a `.case` file (see `tests/onnx.rs`).
const MAGIC: &[u8] = b"ARMACONNXCASE1";

/// One case: `rows` information-state tensors (`input` wide), legal masks and armac's
/// probabilities (`actions` wide), row-major.
struct Case {
    rows: usize,
    input: usize,
    actions: usize,
    info: Vec<f32>,
    legal: Vec<f32>,
    probs: Vec<f32>,
}

fn read_case(path: &Path) -> Result<Case, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| format!("{} is not a case file", path.display()))?;
    let header = |k: usize| -> Result<usize, String> {
        let b = body
            .get(8 * k..8 * k + 8)
            .ok_or_else(|| format!("{}: truncated header", path.display()))?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
    };
    let (rows, input, actions) = (header(0)?, header(1)?, header(2)?);
    let floats: Vec<f32> = body[24..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    let (n_info, n_act) = (rows * input, rows * actions);
    if floats.len() != n_info + 2 * n_act {
        return Err(format!(
            "{}: {} values for {rows} rows of {input} + 2 × {actions}",
            path.display(),
            floats.len()
        ));
    }
    Ok(Case {
        rows,
        input,
        actions,
        info: floats[..n_info].to_vec(),
        legal: floats[n_info..n_info + n_act].to_vec(),
        probs: floats[n_info + n_act..].to_vec(),
    })
}

/// tract's probabilities for the case's states, from the graph in `onnx`.
fn run_tract(onnx: &Path, case: &Case) -> TractResult<Vec<f32>> {
    let model = tract_onnx::onnx()
        .model_for_path(onnx)?
        .with_input_fact(0, f32::fact([case.rows, case.input]).into())?
        .with_input_fact(1, f32::fact([case.rows, case.actions]).into())?
        .into_optimized()?
        .into_runnable()?;
    let info = Tensor::from_shape(&[case.rows, case.input], &case.info)?;
    let legal = Tensor::from_shape(&[case.rows, case.actions], &case.legal)?;
    let out = model.run(tvec!(info.into(), legal.into()))?;
    Ok(out[0]
        .to_plain_array_view::<f32>()?
        .iter()
        .copied()
        .collect())
}

/// The largest `|tract − armac|` of one case.
fn check(case_path: &Path) -> Result<f32, String> {
    let case = read_case(case_path)?;
    let onnx = case_path.with_extension("onnx");
    let got = run_tract(&onnx, &case).map_err(|e| format!("{}: {e:?}", onnx.display()))?;
    if got.len() != case.probs.len() {
        return Err(format!(
            "{}: {} outputs for {} expected",
            onnx.display(),
            got.len(),
            case.probs.len()
        ));
    }
    Ok(got
        .iter()
        .zip(&case.probs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max))
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: armac-onnx-tract DIR (the cases tests/onnx.rs writes)");
        return ExitCode::FAILURE;
    };
    let mut cases: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "case"))
            .collect(),
        Err(e) => {
            eprintln!(
                "cannot read {}: {e} (run `cargo test --release --test onnx` first)",
                dir.display()
            );
            return ExitCode::FAILURE;
        }
    };
    cases.sort();
    if cases.is_empty() {
        eprintln!("no .case files in {}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut failed = 0;
    for path in &cases {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        let tol = tolerance(&name);
        match check(path) {
            Ok(diff) if diff <= tol => println!("{name}: max |tract - armac| = {diff:e}"),
            Ok(diff) => {
                println!("{name}: max |tract - armac| = {diff:e} ABOVE {tol:e}");
                failed += 1;
            }
            Err(e) => {
                println!("{name}: {e}");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        eprintln!("{failed} of {} cases failed", cases.len());
        return ExitCode::FAILURE;
    }
    println!("{} cases agree within their tolerances", cases.len());
    ExitCode::SUCCESS
}

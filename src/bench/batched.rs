//! Batched public-tree solvers (`nn::public`): throughput, layout sizes and state bytes per
//! element; `scripts/bench_batched.sh` runs it beside the tabular peers.

use super::{Result, median};
use crate::cfr::SolverSpec;
use crate::games::load_game;
use crate::tree::PublicTree;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// Options of `armac-bench batched`.
#[derive(clap::Args, Debug, Clone)]
pub struct BatchedArgs {
    #[arg(long)]
    pub game: String,
    /// `cfr`, `cfr+` (any full-width name `SolverSpec::named` knows) or `pos`.
    #[arg(long, default_value = "cfr+")]
    pub algorithm: String,
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    #[arg(long, default_value_t = 20)]
    pub iterations: u64,
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    #[arg(long, default_value = "flex")]
    pub device: String,
    /// `f32` or `f64`.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Skip (print a `skipped` line) when the estimated state of the whole batch exceeds
    /// this many bytes.
    #[arg(long, default_value_t = 2_000_000_000)]
    pub max_state_bytes: u64,
}

/// Floats of solver state per batch element, by tensor, read off the shapes that
/// `nn::public::{cfr,pos}` allocate (see their module docs).
fn batched_state_floats(layout: &crate::tree::tensor::TensorTree, pos: bool) -> Vec<(&str, u64)> {
    let (n, p, a) = (layout.len() as u64, layout.p as u64, layout.a as u64);
    let d = [
        layout.decisions[0].len() as u64,
        layout.decisions[1].len() as u64,
    ];
    if pos {
        // One `[B, W]` tensor per quantity: both players' blocks, a scratch block and (for the
        // strategies) a constant one; baselines `[B, N·P² + 2]`; the reaches of every depth
        // `[B, P²]` per player are alive during a pass.
        let w = (d[0] + d[1] + 1) * p * a;
        let depth = layout.levels.len() as u64;
        vec![
            ("regrets", w),
            ("cumulative", w),
            ("strategy", w + 1),
            ("baselines", n * p * p + 2),
            ("path_reaches", 2 * depth * p * p),
        ]
    } else {
        // Per player `[B, D·P, A]` regrets, cumulative and current blocks; per player reaches
        // `[B, N·P + 1]`, one value vector `[B, N·P + 2]`, the strategy vector `[B, ΣD·P·A + 1]`
        // and the gathered action values `[B, D·P·A + 1]`.
        let blocks = (d[0].max(1) + d[1].max(1)) * p * a;
        vec![
            ("regrets", blocks),
            ("cumulative", blocks),
            ("current", blocks),
            ("reaches", 2 * (n * p + 1)),
            ("values", n * p + 2),
            ("strategy_vector", blocks + 1),
            ("action_values", d[0].max(d[1]).max(1) * p * a + 1),
        ]
    }
}

/// Runs `armac-bench batched` (see [`BatchedArgs`]): one JSON line, or a `skipped` line.
pub fn batched(args: &BatchedArgs) -> Result<Vec<Value>> {
    use crate::cfr::Averaging;
    use crate::cfr::pos::PosSpec;
    use crate::nn::public::cfr::BatchedCfr;
    use crate::nn::public::pos::BatchedPos;
    use crate::nn::public::{Ctx, Precision};
    use crate::tree::history::HistoryTree;
    use crate::tree::tensor::TensorTree;

    let precision = match args.precision.as_str() {
        "f32" => Precision::F32,
        "f64" => Precision::F64,
        other => return Err(format!("--precision must be f32 or f64, not `{other}`").into()),
    };
    let is_pos = args.algorithm == "pos";
    let spec = if is_pos {
        None
    } else {
        Some(SolverSpec::named(&args.algorithm).ok_or_else(|| {
            format!(
                "--algorithm `{}`: expected pos or a full-width name such as cfr, cfr+",
                args.algorithm
            )
        })?)
    };
    if args.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    let g = load_game(&args.game)?;
    let tree = Arc::new(PublicTree::build(g.as_ref())?);
    let ht = HistoryTree::build(g.as_ref(), &tree)?;
    let layout = Arc::new(TensorTree::build(&tree, &ht, 0, None)?);
    let float_bytes: u64 = if precision == Precision::F64 { 8 } else { 4 };
    let parts = batched_state_floats(&layout, is_pos);
    let per_element: u64 = parts.iter().map(|(_, f)| f * float_bytes).sum();
    let total = per_element * args.batch as u64;
    let level_nodes: Vec<u32> = layout.levels.iter().map(|(a, b)| b - a).collect();
    let layout_json = json!({
        "nodes": layout.len(), "p": layout.p, "a": layout.a, "k": layout.k,
        "levels": layout.levels.len(), "level_nodes": level_nodes,
        "decisions": [layout.decisions[0].len(), layout.decisions[1].len()],
        "terminals": layout.terminals.len(), "leaves": layout.leaves.len(),
    });
    let breakdown: serde_json::Map<String, serde_json::Value> = parts
        .iter()
        .map(|(k, f)| (k.to_string(), json!(f * float_bytes)))
        .collect();
    let head = json!({
        "bench": "batched", "game": args.game, "algorithm": args.algorithm, "batch": args.batch,
        "device": args.device, "precision": args.precision, "layout": layout_json,
        "state_bytes_per_element": per_element, "state_bytes_breakdown": breakdown,
        "state_bytes_total": total,
    });
    if total > args.max_state_bytes {
        let mut out = head;
        out["skipped"] = json!(format!(
            "estimated state {total} bytes exceeds {} bytes",
            args.max_state_bytes
        ));
        return Ok(vec![out]);
    }
    if total > 256 << 20 {
        eprintln!(
            "armac-bench batched: B={} holds about {:.2} GB of solver state",
            args.batch,
            total as f64 / 1e9
        );
    }
    let device = crate::nn::select_device(&args.device).map_err(|e| e.to_string())?;
    let ctx = Ctx::new(&device, precision);
    // Both solvers advance by `iterate()` and count public-node updates.
    let nodes = layout.len() as u64;
    let batch = args.batch as u64;
    let t0 = Instant::now();
    let mut step: Box<dyn FnMut() -> u64> = if let Some(spec) = spec {
        let mut s = BatchedCfr::new(
            tree.clone(),
            layout.clone(),
            spec,
            args.batch,
            None,
            None,
            &ctx,
        )?;
        let mut done = 0u64;
        Box::new(move || {
            s.iterate();
            done += nodes * batch;
            done
        })
    } else {
        let spec = PosSpec::default();
        debug_assert!(matches!(spec.averaging, Averaging::Linear));
        let mut s = BatchedPos::new(
            tree.clone(),
            layout.clone(),
            spec,
            args.seed,
            args.batch,
            &ctx,
        )?;
        Box::new(move || {
            s.iterate();
            s.node_updates()
        })
    };
    // Device work is asynchronous (wgpu, cuda): every timed block starts and ends with a sync.
    let sync = || {
        device
            .sync()
            .map_err(|e| format!("device sync failed: {e:?}"))
    };
    let mut updates = step(); // untimed warm-up iteration
    sync()?;
    let setup = t0.elapsed().as_secs_f64();
    let (mut it_rates, mut node_rates, mut secs_all) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.repeats.max(1) {
        let t = Instant::now();
        let before = updates;
        for _ in 0..args.iterations {
            updates = step();
        }
        sync()?;
        let secs = t.elapsed().as_secs_f64();
        secs_all.push(secs);
        it_rates.push(args.iterations as f64 / secs);
        node_rates.push((updates - before) as f64 / secs);
    }
    let its = median(it_rates);
    let mut out = head;
    out["iterations"] = json!(args.iterations);
    out["repeats"] = json!(args.repeats.max(1));
    out["block_seconds"] = json!(median(secs_all));
    out["setup_seconds"] = json!(setup);
    out["iterations_per_second"] = json!(its);
    out["element_iterations_per_second"] = json!(its * args.batch as f64);
    let node_rate = median(node_rates);
    out["node_updates_per_second"] = json!(node_rate);
    // A full-width CFR iteration updates every public node of the layout once.
    out["equivalent_cfr_iterations_per_second"] = json!(node_rate / nodes as f64);
    Ok(vec![out])
}

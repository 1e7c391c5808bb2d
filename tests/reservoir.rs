//! The reservoir of past networks under a memory budget: a run resumed from a full synthetic
//! reservoir (`armac-bench reservoir`) keeps only its working set in memory, trains on, and
//! resumes again.

mod common;
use common::*;

#[test]
fn a_full_reservoir_resumes_within_its_memory_budget() {
    let dir = tmp("reservoir", "full");
    // Kuhn's network is about 0.4 MB in f32: 1 MiB holds one past epoch of the 16.
    let out = run_ok(bench().args([
        "reservoir",
        "--config",
        "kuhn_armac.toml",
        "--snapshots",
        "16",
        "--seconds",
        "4",
        "--keep",
        "--out",
        dir.to_str().unwrap(),
        "--set",
        "armac.epochs=100000",
        "--set",
        "armac.snapshot_memory_mb=1",
        "--set",
        "armac.episodes_per_epoch=128",
        "--set",
        "armac.learning_steps_per_epoch=10",
        "--set",
        "eval.every=1000",
    ]));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(num(&line, "epochs_trained") >= 1.0, "{line}");
    assert!(num(&line, "acting_steps_per_second") > 0.0, "{line}");
    let state = json(&dir.join("checkpoint/state.json"));
    let items = usizes(&state["reservoir"]["items"]);
    let ws = usizes(&state["working_set"]["epochs"]);
    assert_eq!(items.len(), 16, "the reservoir stays full: {state}");
    assert!(!ws.is_empty() && ws.len() < 16, "working set {ws:?}");
    assert!(ws.iter().all(|j| items.contains(j)), "{ws:?} ⊄ {items:?}");
    // Every network the reservoir references is still on disk; a second resume continues.
    for j in &items {
        for id in [j, &(j + 1)] {
            let f = dir.join(format!("reservoir/net_{id:06}.bpk"));
            assert!(f.is_file(), "{} is missing", f.display());
        }
    }
    let epoch = num(&state, "epoch") as u64;
    run_ok(train().args([
        "--resume",
        dir.to_str().unwrap(),
        "--max-seconds",
        "3",
        "--quiet",
    ]));
    let state = json(&dir.join("checkpoint/state.json"));
    assert!(num(&state, "epoch") as u64 > epoch);
    let _ = std::fs::remove_dir_all(&dir);
}

//! End-to-end tests of `armac-bench batched`: the JSON line's throughput fields agree with each
//! other and with the layout, the state estimate scales with batch and precision, oversized
//! batches are skipped, and bad flags fail cleanly.

mod common;

use serde_json::Value;

fn bench(args: &[&str]) -> std::process::Output {
    common::bench().arg("batched").args(args).output().unwrap()
}

fn line(args: &[&str]) -> Value {
    let out = bench(args);
    assert!(
        out.status.success(),
        "armac-bench batched failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line expected: {text}");
    serde_json::from_str(lines[0]).unwrap()
}

use common::num as f;

#[test]
fn cfr_line_is_consistent_with_its_layout() {
    let v = line(&[
        "--game",
        "kuhn_poker",
        "--algorithm",
        "cfr+",
        "--batch",
        "3",
        "--iterations",
        "4",
        "--repeats",
        "3",
    ]);
    let lay = &v["layout"];
    let nodes = lay["nodes"].as_f64().unwrap();
    let levels: f64 = lay["level_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert_eq!(levels, nodes, "levels partition the nodes");
    let its = f(&v, "iterations_per_second");
    assert!(its > 0.0);
    let el = f(&v, "element_iterations_per_second");
    assert!((el - 3.0 * its).abs() <= 1e-9 * el);
    // Full width: every node of the layout is one update per element and iteration.
    let upd = f(&v, "node_updates_per_second");
    assert!(
        (upd - nodes * el).abs() <= 1e-6 * upd,
        "{upd} vs {}",
        nodes * el
    );
    // The state estimate: regrets are the D·P·A blocks of both players, in f32.
    let (p, a) = (lay["p"].as_f64().unwrap(), lay["a"].as_f64().unwrap());
    let d: f64 = lay["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().max(1.0))
        .sum();
    assert_eq!(f(&v["state_bytes_breakdown"], "regrets"), d * p * a * 4.0);
    let parts: f64 = v["state_bytes_breakdown"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert_eq!(parts, f(&v, "state_bytes_per_element"));
    assert_eq!(
        f(&v, "state_bytes_total"),
        3.0 * f(&v, "state_bytes_per_element")
    );
}

#[test]
fn pos_counts_path_nodes_and_f64_doubles_the_state() {
    let v = line(&[
        "--game",
        "kuhn_poker",
        "--algorithm",
        "pos",
        "--batch",
        "2",
        "--iterations",
        "5",
        "--repeats",
        "1",
        "--precision",
        "f64",
        "--seed",
        "7",
    ]);
    let el = f(&v, "element_iterations_per_second");
    let per_it = f(&v, "node_updates_per_second") / el;
    let levels = v["layout"]["levels"].as_f64().unwrap();
    let nodes = v["layout"]["nodes"].as_f64().unwrap();
    let eq = f(&v, "equivalent_cfr_iterations_per_second");
    assert!((eq * nodes - per_it * el).abs() <= 1e-6 * eq * nodes);
    // Two passes (alternating), each a root-to-terminal path of at most `levels` nodes.
    assert!(
        (4.0..=2.0 * levels).contains(&per_it),
        "{per_it} node updates per element-iteration"
    );
    let w = line(&[
        "--game",
        "kuhn_poker",
        "--algorithm",
        "pos",
        "--batch",
        "2",
        "--iterations",
        "1",
        "--repeats",
        "1",
    ]);
    assert_eq!(
        f(&v, "state_bytes_per_element"),
        2.0 * f(&w, "state_bytes_per_element")
    );
}

#[test]
fn an_oversized_batch_is_skipped_with_a_reason() {
    let v = line(&[
        "--game",
        "kuhn_poker",
        "--algorithm",
        "cfr+",
        "--batch",
        "4096",
        "--iterations",
        "1000000",
        "--max-state-bytes",
        "1000",
    ]);
    assert!(
        v["skipped"]
            .as_str()
            .unwrap()
            .contains("exceeds 1000 bytes")
    );
    assert!(v.get("iterations_per_second").is_none());
    assert!(f(&v, "state_bytes_total") > 1000.0);
}

#[test]
fn bad_flags_fail_cleanly() {
    for (args, needle) in [
        (
            vec!["--game", "kuhn_poker", "--precision", "f16"],
            "--precision",
        ),
        (
            vec!["--game", "kuhn_poker", "--algorithm", "cfr++"],
            "--algorithm",
        ),
        (vec!["--game", "kuhn_poker", "--batch", "0"], "--batch"),
        (vec!["--game", "kuhn_poker", "--device", "nope"], "nope"),
    ] {
        let out = bench(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

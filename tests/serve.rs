//! `armac-eval serve` over HTTP: the assets and model list, path traversal, the preflop chart
//! against direct policy queries, the infostate tables, the run view and bad policies at
//! start. Play sessions are in `tests/serve_play.rs`, the page in a browser in
//! `tests/serve_browser.rs`.

mod common;
#[path = "common/http.rs"]
mod http;

use armac::game::State;
use common::serve;
use http::{HUNL, LEDUC, get, kuhn_policy_file, ok, request};
use serde_json::json;
use std::io::Write;
use std::path::Path;

#[test]
fn assets_models_and_path_traversal() {
    let s = serve(&["--policy", HUNL, "--policy", LEDUC]);
    let page = get(&s, "/");
    assert_eq!(page.status, 200);
    assert!(page.head.contains("text/html"), "{}", page.head);
    assert!(page.body.contains("<script src=\"/app.js\">"));
    assert!(get(&s, "/app.js").body.contains("async function autotest"));
    assert!(get(&s, "/style.css").body.contains(".chart"));
    let m = ok(get(&s, "/api/models"));
    let models = m["models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[0]["name"], HUNL);
    assert_eq!(models[0]["kind"], "holdem");
    assert_eq!(models[0]["heads"], json!(["average", "current"]));
    assert_eq!(models[0]["unit"], "mbb/hand");
    assert_eq!(models[0]["run"], false);
    assert_eq!(models[1]["game"], "leduc_poker");
    assert_eq!(models[1]["kind"], "table");
    assert_eq!(models[1]["unit"], "chips/hand");
    for path in [
        "/../Cargo.toml",
        "/%2e%2e/Cargo.toml",
        "/%2E%2E%2FCargo.toml",
        "/..%2f..%2fetc%2fpasswd",
        "/app.js/../../Cargo.toml",
        "/api/../Cargo.toml",
        "//etc/passwd",
        "/src/lib.rs",
        "/models/hunl_fcpa_armac/manifest.json",
    ] {
        let a = get(&s, path);
        assert_eq!(a.status, 404, "{path}: {}", a.body);
        assert!(a.json()["error"].as_str().unwrap().contains("no such page"));
        assert!(
            !a.body.contains("[package]") && !a.body.contains("root:"),
            "{path}"
        );
    }
    let a = request(&s, "DELETE", "/api/models", None);
    assert!(a.error(405).contains("not allowed"));
    assert!(get(&s, "/api/play/new").error(405).contains("GET"));
}

#[test]
fn preflop_chart_matches_the_policy_queried_hand_by_hand() {
    let s = serve(&["--policy", HUNL, "--policy", LEDUC]);
    let c = ok(get(&s, "/api/chart?model=0&policy=average"));
    assert_eq!(c["status"], "decision");
    // hunl_fcpa: the small blind (player 1) acts first before the flop.
    assert_eq!(c["player"], 1);
    assert_eq!(c["round"], 0);
    assert_eq!(
        c["pot"], 200,
        "OpenSpiel's [Pot: 200]: the big blind times two"
    );
    let labels: Vec<&str> = c["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["fold", "call", "pot", "all-in"]);
    let cells = c["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 169);
    assert_eq!(cells[0]["label"], "AA");
    assert_eq!(cells[1]["label"], "AKs");
    assert_eq!(cells[13]["label"], "AKo");
    assert_eq!(cells[168]["label"], "22");
    let combos: u64 = cells.iter().map(|c| c["combos"].as_u64().unwrap()).sum();
    assert_eq!(combos, 1326);
    for cell in cells {
        let p: Vec<f64> = cell["probs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{cell}");
    }
    // The AA cell is the mean over its six combos of the network queried on one game state
    // per combo (the per-state path, not the batched range path the server uses).
    let (_, policy) = armac::run::armac::load_checkpoint_policy(Path::new(HUNL)).unwrap();
    let game = armac::games::universal_poker::UniversalPokerGame::hunl_fcpa();
    let aces = ["Ac", "Ad", "Ah", "As"].map(|c| armac::games::cards::parse_card(c).unwrap());
    let mut mean = [0.0f64; 4];
    let mut n = 0.0;
    for i in 0..4 {
        for j in i + 1..4 {
            let mut st = game.initial_state();
            for card in ["2c", "3d"] {
                st.apply(armac::games::cards::parse_card(card).unwrap() as usize);
            }
            st.apply(aces[i] as usize);
            st.apply(aces[j] as usize);
            let p = armac::policy::Policy::action_probabilities(&policy, &st).unwrap();
            assert_eq!(st.legal_actions(), [0, 1, 2, 3]);
            for (m, x) in mean.iter_mut().zip(p) {
                *m += x;
            }
            n += 1.0;
        }
    }
    for (k, m) in mean.iter().enumerate() {
        let served = cells[0]["probs"][k].as_f64().unwrap();
        assert!(
            (served - m / n).abs() < 1e-4,
            "AA action {k}: served {served}, direct {}",
            m / n
        );
    }
    // The current policy is another head with other numbers.
    let cur = ok(get(&s, "/api/chart?model=0&policy=current"));
    assert_ne!(cur["cells"][0]["probs"], c["cells"][0]["probs"]);
}

#[test]
fn chart_follows_betting_and_boards_and_refuses_bad_input() {
    let s = serve(&["--policy", HUNL, "--policy", LEDUC]);
    // Limp, check: the flop needs three board cards.
    let c = ok(get(&s, "/api/chart?model=0&history=1,1"));
    assert_eq!(c["status"], "needs_board");
    assert_eq!(c["round"], 1);
    assert_eq!(c["dealt"], 0);
    let c = ok(get(&s, "/api/chart?model=0&history=1,1&board=AsKd7c"));
    assert_eq!(c["status"], "decision");
    assert_eq!(c["player"], 0);
    assert_eq!(c["round"], 1);
    assert_eq!(c["board"], "AsKd7c");
    let cells = c["cells"].as_array().unwrap();
    let combos: u64 = cells.iter().map(|c| c["combos"].as_u64().unwrap()).sum();
    assert_eq!(combos, 49 * 48 / 2);
    assert_eq!(
        cells[0]["combos"], 3,
        "AA with the ace of spades on the board"
    );
    // Checking is free on the flop: no fold.
    assert_eq!(c["actions"][0]["label"], "call");
    // The turn needs one more card; a folded hand is over.
    let c = ok(get(&s, "/api/chart?model=0&history=1,1,1,1&board=AsKd7c"));
    assert_eq!(
        (c["status"].as_str(), c["dealt"].as_u64()),
        (Some("needs_board"), Some(3))
    );
    assert_eq!(
        ok(get(&s, "/api/chart?model=0&history=0"))["status"],
        "terminal"
    );
    let bad = [
        (
            "/api/chart?model=0&history=1,x",
            400,
            "not an action number",
        ),
        ("/api/chart?model=0&history=7", 400, "not legal"),
        (
            "/api/chart?model=0&history=0,1",
            400,
            "after the hand is over",
        ),
        ("/api/chart?model=0&history=1,1&board=AsAs7c", 400, "twice"),
        (
            "/api/chart?model=0&history=1,1&board=Zz",
            400,
            "not a list of cards",
        ),
        ("/api/chart?model=0&board=AsKdQcJhTs9s", 400, "at most 5"),
        ("/api/chart?model=0&policy=mine", 400, "no policy `mine`"),
        ("/api/chart?model=9", 404, "no model 9"),
        ("/api/chart?model=x", 400, "not a model id"),
        ("/api/chart", 400, "`model` is missing"),
        ("/api/chart?model=1", 400, "use /api/table"),
        ("/api/chart?model=0&history=%zz", 400, "bad %-escape"),
    ];
    for (path, status, needle) in bad {
        let msg = get(&s, path).error(status);
        assert!(msg.contains(needle), "{path}: {msg}");
    }
}

#[test]
fn infostate_tables_list_every_information_state() {
    let dir = common::tmp("serve", "table");
    let (file, entries) = kuhn_policy_file(&dir);
    let file = file.to_str().unwrap();
    let s = serve(&["--policy", LEDUC, "--policy", file, "--policy", HUNL]);
    let t = ok(get(&s, "/api/table?model=0&policy=average&limit=5"));
    assert_eq!(t["total"], 936, "Leduc has 936 information states");
    assert_eq!(t["rows"].as_array().unwrap().len(), 5);
    let row = &t["rows"][0];
    assert!(
        row["infostate"]
            .as_str()
            .unwrap()
            .starts_with("[Observer: 0]")
    );
    // Cards by name: the player's card, then the board once it is dealt.
    let all = ok(get(&s, "/api/table?model=0&policy=average&limit=1000"));
    let cards: Vec<&str> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cards"].as_str().unwrap())
        .collect();
    assert_eq!(
        cards[0], "J",
        "the first Leduc row is player 0 holding a jack"
    );
    assert!(cards.iter().all(|c| ["J", "Q", "K"].contains(&&c[..1])));
    assert!(cards.contains(&"K | board Q"), "{cards:?}");
    let kuhn = ok(get(&s, "/api/table?model=1&limit=1000"));
    let kuhn_cards: Vec<&str> = kuhn["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cards"].as_str().unwrap())
        .collect();
    assert_eq!(kuhn_cards.len(), 12);
    for name in ["J", "Q", "K"] {
        assert_eq!(kuhn_cards.iter().filter(|&&c| c == name).count(), 4);
    }
    let probs: f64 = row["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["prob"].as_f64().unwrap())
        .sum();
    assert!((probs - 1.0).abs() < 1e-6);
    let p1 = ok(get(&s, "/api/table?model=0&player=1&limit=1000"));
    assert_eq!(p1["matching"], 468);
    assert!(
        p1["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["player"] == 1)
    );
    // The policy file's table comes back as written.
    let k = ok(get(&s, "/api/table?model=1&limit=100"));
    assert_eq!(k["total"], 12);
    for (key, bet) in &entries {
        let row = k["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["infostate"] == key.as_str())
            .unwrap_or_else(|| panic!("no row {key}"));
        assert_eq!(row["actions"][1]["label"], "Bet");
        assert!((row["actions"][1]["prob"].as_f64().unwrap() - bet).abs() < 1e-12);
    }
    let f = ok(get(&s, "/api/table?model=1&filter=pb"));
    assert_eq!(f["matching"], 3);
    let page = ok(get(&s, "/api/table?model=1&offset=10&limit=5"));
    assert_eq!(page["rows"].as_array().unwrap().len(), 2);
    for (path, status, needle) in [
        ("/api/table?model=0&limit=0", 400, "`limit` 0"),
        ("/api/table?model=0&limit=5000", 400, "`limit` 5000"),
        ("/api/table?model=0&player=2", 400, "`player` `2`"),
        ("/api/table?model=0&offset=-1", 400, "`offset` `-1`"),
        (
            "/api/table?model=1&policy=average",
            400,
            "no policy `average`",
        ),
        ("/api/table?model=2", 400, "use /api/chart"),
    ] {
        let msg = get(&s, path).error(status);
        assert!(msg.contains(needle), "{path}: {msg}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_view_reads_the_learning_curves_as_they_grow() {
    let dir = common::tmp("serve", "run");
    let (config, _) = armac::run::config::Config::load("kuhn_armac.toml", &[]).unwrap();
    armac::run::armac::write_synthetic_run(&config, &dir, 1).unwrap();
    std::fs::write(
        dir.join("metrics.csv"),
        "epoch,seconds,nash_conv\n0,0.5,0.4\n1,1.0,0.3\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("lbr_fcpa.csv"),
        "step,mean_mbb,ci95_mbb,hands,seconds\n1,900.5,30.25,4000,2.5\n",
    )
    .unwrap();
    let s = serve(&["--policy", dir.to_str().unwrap(), "--policy", LEDUC]);
    let models = ok(get(&s, "/api/models"));
    assert_eq!(models["models"][0]["run"], true);
    assert_eq!(models["models"][1]["run"], false);
    let r = ok(get(&s, "/api/run?model=0"));
    assert_eq!(
        r["metrics"]["columns"],
        json!(["epoch", "seconds", "nash_conv"])
    );
    assert_eq!(
        r["metrics"]["rows"],
        json!([[0.0, 0.5, 0.4], [1.0, 1.0, 0.3]])
    );
    assert_eq!(r["lbr"][0]["variant"], "fcpa");
    assert_eq!(
        r["lbr"][0]["table"]["rows"],
        json!([[1.0, 900.5, 30.25, 4000.0, 2.5]])
    );
    // A row written while the server runs is in the next answer.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("metrics.csv"))
        .unwrap();
    writeln!(f, "2,1.5,nan").unwrap();
    drop(f);
    let r = ok(get(&s, "/api/run?model=0"));
    assert_eq!(r["metrics"]["total_rows"], 3);
    assert_eq!(r["metrics"]["rows"][2], json!([2.0, 1.5, null]));
    assert!(
        get(&s, "/api/run?model=1")
            .error(404)
            .contains("not a run directory")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_policies_are_refused_at_start() {
    common::run_err(
        common::eval().args(["serve", "--port", "0", "--policy", "models/none"]),
        "--policy models/none",
    );
    common::run_err(
        common::eval().args(["serve", "--port", "0", "--policy", "sog:runs/x"]),
        "Student of Games",
    );
    common::run_err(
        common::eval().args([
            "serve",
            "--port",
            "0",
            "--threads",
            "0",
            "--policy",
            "uniform",
        ]),
        "--threads 0",
    );
}

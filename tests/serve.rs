//! `armac-eval serve` over HTTP: every endpoint's JSON, refused input (bad parameters, path
//! traversal, actions out of turn), the chart against direct policy queries, the run view, and
//! the page itself in headless Chromium (skipped with a message when /usr/bin/chromium is
//! missing; CI installs it). `ARMAC_WRITE_SCREENSHOT=1` also writes the browser test's
//! screenshot to docs/serve.png (the README's picture).

mod common;

use armac::game::State;
use common::{Served, serve};
use serde_json::{Value, json};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HUNL: &str = "models/hunl_fcpa_armac";
const LEDUC: &str = "models/leduc_armac";

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The error message of a refused request (asserting its status).
    fn error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        self.json()["error"]
            .as_str()
            .expect("an error message")
            .to_string()
    }
}

/// One raw HTTP/1.1 request (the path is sent exactly as given).
fn request(s: &Served, method: &str, path: &str, body: Option<&str>) -> Answer {
    request_as(s, method, path, &s.addr, "", body)
}

/// [`request`] with `host` in the Host header and `extra` header lines (each ending in CRLF).
fn request_as(
    s: &Served,
    method: &str,
    path: &str,
    host: &str,
    extra: &str,
    body: Option<&str>,
) -> Answer {
    let mut stream = TcpStream::connect(&s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head.contains("Transfer-Encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Answer {
        status,
        head: head.to_string(),
        body,
    }
}

/// The body of a chunked response (`<hex size>\r\n<data>\r\n` ... `0\r\n\r\n`).
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, tail) = rest.split_once("\r\n").expect("a chunk size line");
        let n = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
        if n == 0 {
            return out;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
}

fn get(s: &Served, path: &str) -> Answer {
    request(s, "GET", path, None)
}

fn post(s: &Served, path: &str, body: &Value) -> Answer {
    request(s, "POST", path, Some(&body.to_string()))
}

fn ok(a: Answer) -> Value {
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

/// A Kuhn policy file whose every entry differs: P(bet) = (k + 1) / 13 at the k-th infostate.
fn kuhn_policy_file(dir: &Path) -> (PathBuf, Vec<(String, f64)>) {
    std::fs::create_dir_all(dir).unwrap();
    let keys = [
        "0", "1", "2", "0p", "1p", "2p", "0b", "1b", "2b", "0pb", "1pb", "2pb",
    ];
    let entries: Vec<(String, f64)> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| (key.to_string(), (k + 1) as f64 / 13.0))
        .collect();
    let policy: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(key, bet)| (key.clone(), json!([[0, 1.0 - bet], [1, bet]])))
        .collect();
    let path = dir.join("kuhn.json");
    std::fs::write(
        &path,
        json!({"game": "kuhn_poker", "policy": policy}).to_string(),
    )
    .unwrap();
    (path, entries)
}

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

/// Plays the current hand of `v` to the end, calling (or passing) whenever it can.
fn play_out(s: &Served, mut v: Value) -> Value {
    for _ in 0..100 {
        if v["over"] == true {
            return v;
        }
        assert_eq!(v["to_act"], "you");
        let legal = v["legal"].as_array().unwrap();
        let pick = legal
            .iter()
            .find(|a| ["Call", "Pass"].contains(&a["label"].as_str().unwrap()))
            .unwrap_or(&legal[0]);
        v = ok(post(
            s,
            "/api/play/act",
            &json!({"session": v["session"], "hand": v["hand"], "step": v["step"], "action": pick["action"]}),
        ));
    }
    panic!("the hand did not end in 100 actions");
}

#[test]
fn play_a_holdem_match_and_refuse_actions_out_of_turn() {
    let s = serve(&["--policy", HUNL]);
    // Seat 1 is the small blind, first to act before the flop: the hand waits for the person.
    let v = ok(post(
        &s,
        "/api/play/new",
        &json!({"model": 0, "seat": 1, "seed": 5}),
    ));
    let sid = v["session"].as_str().unwrap().to_string();
    assert_eq!(sid.len(), 32);
    assert_eq!(v["hand"], 1);
    assert_eq!(v["seat"], 1);
    assert_eq!(v["over"], false);
    assert_eq!(v["to_act"], "you");
    assert_eq!(v["your_cards"].as_array().unwrap().len(), 2);
    assert_eq!(v["model_cards"], json!([]), "the model's cards stay hidden");
    assert_eq!(v["result"]["hands"], 0);
    assert_eq!(v["events"], json!([]), "nobody has acted yet");
    assert_eq!(v["pot"], 200);
    assert!(
        v["infostate"].as_str().unwrap().contains("[Pot: 200]"),
        "the pot is the game's own: {v}"
    );
    let labels = |v: &Value| -> Vec<String> {
        v["legal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["label"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(labels(&v), ["Fold", "Call", "Pot", "All-in"]);
    // The person checks when nothing is owed and calls a bet; the pot is always the game's.
    let mut seen = (false, false);
    for seed in 0..20 {
        let mut w = ok(post(
            &s,
            "/api/play/new",
            &json!({"model": 0, "seat": 0, "seed": seed}),
        ));
        while w["over"] == false {
            let c = &w["contributions"];
            let l = labels(&w);
            if c[0] == c[1] {
                assert!(
                    l.contains(&"Check".into()) && !l.contains(&"Call".into()),
                    "{w}"
                );
                seen.0 = true;
            } else {
                assert!(
                    l.contains(&"Call".into()) && !l.contains(&"Check".into()),
                    "{w}"
                );
                seen.1 = true;
            }
            let pot = w["pot"].as_i64().unwrap();
            assert!(
                w["infostate"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("[Pot: {pot}]")),
                "{w}"
            );
            let body =
                json!({"session": w["session"], "hand": w["hand"], "step": w["step"], "action": 1});
            w = ok(post(&s, "/api/play/act", &body));
        }
    }
    assert_eq!(seen, (true, true), "both a check and a call were offered");
    let legal: Vec<u64> = v["legal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_u64().unwrap())
        .collect();
    let (hand, step) = (v["hand"].clone(), v["step"].clone());
    let act = |hand: &Value, step: &Value, action: u64| {
        post(
            &s,
            "/api/play/act",
            &json!({"session": sid, "hand": hand, "step": step, "action": action}),
        )
    };
    let stale = step.as_u64().unwrap() - 1;
    assert!(
        act(&hand, &json!(stale), legal[0])
            .error(409)
            .contains("out of turn")
    );
    assert!(
        act(&json!(2), &step, legal[0])
            .error(409)
            .contains("out of turn")
    );
    assert!(act(&hand, &step, 9).error(400).contains("not legal"));
    let unknown = post(
        &s,
        "/api/play/act",
        &json!({"session": "0123", "hand": 1, "step": 5, "action": 1}),
    );
    assert!(unknown.error(404).contains("no play session"));
    let missing = post(
        &s,
        "/api/play/act",
        &json!({"session": sid, "hand": 1, "action": 1}),
    );
    assert!(missing.error(400).contains("`step` is missing"));
    let neg = post(
        &s,
        "/api/play/act",
        &json!({"session": sid, "hand": 1, "step": -2, "action": 1}),
    );
    assert!(neg.error(400).contains("`step` -2"));
    assert!(
        request(&s, "POST", "/api/play/act", Some("{not json"))
            .error(400)
            .contains("not JSON")
    );
    assert!(
        request(&s, "POST", "/api/play/act", Some("[1]"))
            .error(400)
            .contains("JSON object")
    );
    assert!(
        post(&s, "/api/play/next", &json!({"session": sid}))
            .error(409)
            .contains("still being played")
    );
    // The refused requests changed nothing: the state is the one dealt.
    let same = ok(get(&s, &format!("/api/play/state?session={sid}")));
    assert_eq!(same["step"], step);
    assert_eq!(same["your_cards"], v["your_cards"]);
    let end = play_out(&s, v);
    assert_eq!(end["over"], true);
    assert_eq!(end["to_act"], "over");
    assert_eq!(end["legal"], json!([]));
    assert_eq!(end["model_cards"].as_array().unwrap().len(), 2);
    assert_eq!(end["result"]["hands"], 1);
    assert_eq!(end["result"]["unit"], "mbb/hand");
    let won = end["hand_result"].as_f64().unwrap();
    assert!(
        (end["result"]["mean"].as_f64().unwrap() - won * 10.0).abs() < 1e-9,
        "mbb = chips / 100 bb * 1000"
    );
    assert_eq!(end["result"]["ci95"], Value::Null);
    let after = act(&end["hand"], &end["step"], 1);
    assert!(after.error(409).contains("is over"));
    let v2 = ok(post(&s, "/api/play/next", &json!({"session": sid})));
    assert_eq!(v2["hand"], 2);
    assert_eq!(v2["seat"], 0, "seats alternate");
    let end2 = play_out(&s, v2);
    assert_eq!(end2["result"]["hands"], 2);
    assert!(end2["result"]["ci95"].as_f64().is_some());
    let h = get(&s, &format!("/api/play/history?session={sid}"));
    assert_eq!(h.status, 200);
    assert!(
        h.head.contains("Content-Disposition: attachment"),
        "{}",
        h.head
    );
    // Hold'em hands download in the Poker Hand History format: the person is `you`, in PHH's
    // seat of the small blind (`p2`) in hand 1 (OpenSpiel's player 1) and of the big blind in
    // hand 2; each table ends with the finishing stacks of the hand's result.
    assert!(
        h.head.contains("armac-hands-") && h.head.contains(".phhs"),
        "{}",
        h.head
    );
    assert!(
        h.body.starts_with("[1]\nvariant = 'NT'\n") && h.body.contains("\n[2]\nvariant"),
        "{}",
        h.body
    );
    assert!(!h.body.contains("[3]"), "{}", h.body);
    let players: Vec<&str> = h
        .body
        .lines()
        .filter(|l| l.starts_with("players = "))
        .collect();
    assert_eq!(players.len(), 2, "{}", h.body);
    assert!(players[0].ends_with(", \"you\"]"), "{}", players[0]);
    assert!(
        players[1].starts_with("players = [\"you\", "),
        "{}",
        players[1]
    );
    let stacks: Vec<&str> = h
        .body
        .lines()
        .filter(|l| l.starts_with("finishing_stacks = "))
        .collect();
    let you_won = |line: &str, seat: usize| {
        let v: Vec<f64> = line["finishing_stacks = [".len()..line.len() - 1]
            .split(", ")
            .map(|x| x.parse().unwrap())
            .collect();
        v[seat] - 20000.0
    };
    assert_eq!(you_won(stacks[0], 1), won, "{}", h.body);
    let total = you_won(stacks[0], 1) + you_won(stacks[1], 0);
    let mean_mbb = end2["result"]["mean"].as_f64().unwrap();
    assert!((total * 10.0 / 2.0 - mean_mbb).abs() < 1e-9, "{}", h.body);
    assert!(
        get(&s, "/api/play/history?session=nope")
            .error(404)
            .contains("no play session")
    );
    assert!(
        get(&s, "/api/play/state")
            .error(400)
            .contains("`session` is missing")
    );
    for (body, needle) in [
        (json!({"model": 0, "seat": 2}), "`seat` 2"),
        (json!({"model": 0, "policy": "best"}), "no policy `best`"),
        (json!({"model": 3}), "no model 3"),
        (json!({"seat": 0}), "`model` is missing"),
    ] {
        let a = post(&s, "/api/play/new", &body);
        assert!(a.status == 400 || a.status == 404, "{body}: {}", a.body);
        assert!(
            a.json()["error"].as_str().unwrap().contains(needle),
            "{body}: {}",
            a.body
        );
    }
}

#[test]
fn other_sites_pages_are_refused() {
    let s = serve(&["--policy", LEDUC]);
    // DNS rebinding: the attacker's name in Host.
    let port = s.addr.rsplit(':').next().unwrap();
    let rebound = request_as(
        &s,
        "GET",
        "/api/models",
        &format!("evil.example:{port}"),
        "",
        None,
    );
    assert!(
        rebound.error(403).contains("evil.example"),
        "{}",
        rebound.body
    );
    assert_eq!(
        request_as(
            &s,
            "GET",
            "/api/models",
            &format!("localhost:{port}"),
            "",
            None
        )
        .status,
        200
    );
    // A cross-site form post: the other page in Origin.
    let body = json!({"model": 0, "policy": "current", "seat": 1}).to_string();
    let posted = request_as(
        &s,
        "POST",
        "/api/play/new",
        &s.addr,
        "Origin: http://evil.example\r\n",
        Some(&body),
    );
    assert!(
        posted.error(403).contains("another site"),
        "{}",
        posted.body
    );
    let own = format!("Origin: http://{}\r\n", s.addr);
    let played = request_as(&s, "POST", "/api/play/new", &s.addr, &own, Some(&body));
    assert_eq!(played.status, 200, "{}", played.body);
}

#[test]
fn play_kuhn_and_leduc_hands_to_the_end() {
    let dir = common::tmp("serve", "play");
    let (file, _) = kuhn_policy_file(&dir);
    let s = serve(&["--policy", LEDUC, "--policy", file.to_str().unwrap()]);
    for (model, policy) in [(0, "current"), (1, "policy")] {
        let mut v = ok(post(
            &s,
            "/api/play/new",
            &json!({"model": model, "policy": policy, "seat": 1}),
        ));
        assert_eq!(v["policy"], policy);
        for hand in 1..=4 {
            assert_eq!(v["your_cards"].as_array().unwrap().len(), 1, "{v}");
            let end = play_out(&s, v);
            assert_eq!(end["model_cards"].as_array().unwrap().len(), 1);
            assert_eq!(end["result"]["hands"], hand);
            assert_eq!(end["result"]["unit"], "chips/hand");
            v = ok(post(
                &s,
                "/api/play/next",
                &json!({"session": end["session"]}),
            ));
        }
        // Games without a PHH variant download their hands as text.
        let h = get(
            &s,
            &format!(
                "/api/play/history?session={}",
                v["session"].as_str().unwrap()
            ),
        );
        assert!(h.head.contains(".txt"), "{}", h.head);
        assert!(h.body.contains("Hand 4 ") && h.body.contains("4 finished hands"));
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

/// Runs `chromium` with `args` (headless, no network of its own), killed after 90 s; its stdout.
fn chromium(args: &[String]) -> String {
    let profile = common::tmp("serve", &format!("chromium-{}", args.len()));
    let mut child = Command::new("/usr/bin/chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=30000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium ran over 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_dir_all(&profile);
    reader.join().unwrap()
}

/// The page's own report of `?autotest=1` from the dumped DOM.
fn autotest_report(dom: &str) -> Value {
    let start = dom
        .find("<pre id=\"autotest-result\"")
        .unwrap_or_else(|| panic!("no report element; DOM:\n{dom}"));
    let rest = &dom[start..];
    let tag_end = rest.find('>').unwrap();
    assert!(
        rest[..tag_end].contains("data-done=\"1\""),
        "the autotest did not finish; DOM:\n{dom}"
    );
    let text = &rest[tag_end + 1..rest.find("</pre>").unwrap()];
    serde_json::from_str(
        &text
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">"),
    )
    .unwrap_or_else(|e| panic!("bad report ({e}): {text}"))
}

#[test]
fn the_page_plays_a_hand_in_a_headless_browser() {
    if !Path::new("/usr/bin/chromium").exists() {
        println!("SKIPPED: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    }
    let s = serve(&["--policy", HUNL, "--policy", LEDUC]);
    let url = |q: &str| format!("http://{}/?{q}", s.addr);
    let dom = chromium(&["--dump-dom".into(), url("autotest=1")]);
    let r = autotest_report(&dom);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["model"], HUNL);
    assert_eq!(r["chart_cells"], 169);
    assert_eq!(
        r["chart_coloured"], 169,
        "every cell has its action colours"
    );
    assert_eq!(r["hand_over"], true);
    assert!(
        r["moves"].as_u64().unwrap() >= 1,
        "the page made the person's moves: {r}"
    );
    assert!(r["events"].as_u64().unwrap() >= 2, "{r}");
    let hands = r["hands"].as_u64().unwrap();
    assert!(
        r["result"]
            .as_str()
            .unwrap()
            .contains(&format!("{hands} hand(s)")),
        "{r}"
    );
    assert_eq!(
        r["model_cards"].as_str().unwrap().split(' ').count(),
        2,
        "{r}"
    );
    // What the person saw at the first decision: the game's own pot, poker's button names,
    // two named cards.
    let pot = r["first_pot"].as_str().unwrap();
    assert!(
        r["first_infostate"]
            .as_str()
            .unwrap()
            .contains(&format!("[Pot: {pot}]")),
        "{r}"
    );
    let buttons: Vec<&str> = r["first_buttons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(
        buttons
            .iter()
            .all(|b| ["Fold", "Check", "Call", "Pot", "All-in"].contains(b)),
        "{r}"
    );
    assert!(
        buttons.is_empty() || buttons.contains(&"Check") != buttons.contains(&"Call"),
        "{r}"
    );
    let cards: Vec<&str> = r["first_cards"].as_str().unwrap().split(' ').collect();
    assert!(
        cards.len() == 2 && cards.iter().all(|c| c.len() == 2),
        "{r}"
    );
    let leduc = autotest_report(&chromium(&["--dump-dom".into(), url("model=1&autotest=1")]));
    assert_eq!(leduc["ok"], true, "{leduc}");
    assert!(
        ["J", "Q", "K"].contains(&leduc["first_cards"].as_str().unwrap()),
        "{leduc}"
    );
    let table_cards = leduc["table_cards"].as_array().unwrap();
    assert_eq!(table_cards.len(), 100);
    assert!(
        table_cards
            .iter()
            .all(|c| ["J", "Q", "K"].contains(&&c.as_str().unwrap()[..1])),
        "{leduc}"
    );
    assert_eq!(leduc["table_total"], 936);
    assert_eq!(leduc["table_rows"], 100);
    assert!(leduc["moves"].as_u64().unwrap() >= 1, "{leduc}");
    // The screenshot: a real picture of the chart, not a blank page.
    let dir = common::tmp("serve", "shot");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("serve.png");
    chromium(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1360,900".into(),
        url("autotest=1"),
    ]);
    let decoder = png::Decoder::new(BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1360, 900));
    let channels = info.line_size / info.width as usize;
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let mut colours: Vec<[u8; 3]> = pixels.iter().map(|p| [p[0], p[1], p[2]]).collect();
    let coloured = colours
        .iter()
        .filter(|c| c.iter().max().unwrap() - c.iter().min().unwrap() > 60)
        .count();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() > 200,
        "{} distinct colours: a blank page",
        colours.len()
    );
    assert!(
        coloured > pixels.len() / 20,
        "only {coloured} of {} pixels are coloured: the chart did not render",
        pixels.len()
    );
    if std::env::var_os("ARMAC_WRITE_SCREENSHOT").is_some() {
        std::fs::copy(
            &png,
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/serve.png"),
        )
        .unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

//! `armac-eval serve`'s play sessions over HTTP: a Hold'em match, Kuhn and Leduc hands played
//! to the end, actions out of turn and other sites' requests refused.

mod common;
#[path = "common/http.rs"]
mod http;

use common::serve;
use http::{HUNL, LEDUC, get, kuhn_policy_file, ok, play_out, post, request, request_as};
use serde_json::{Value, json};

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

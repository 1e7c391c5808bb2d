//! Golden tests of `universal_poker` against OpenSpiel 2.0.2: the FCPA game (seeded uniform
//! and call/raise-heavy playouts, the hand-built scenarios) and a few other configurations
//! (tests/data/golden_fcpa.json, written by scripts/make_golden_fcpa.py), plus the reference
//! scenarios and playouts of the shared `hunl_fcpa.json` (`../shared/reference/` beside the crate,
//! else the copy tests/data/reference_hunl_fcpa.json).
//! Every string, tensor, legal action list, chance distribution and return must match exactly.

mod common;

use armac::game::conformance::check_game;
use armac::game::{Game, State, Turn};
use armac::games::load_game;
use armac::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use serde_json::Value;
use std::path::PathBuf;

/// The golden file; `ARMAC_GOLDEN_FCPA` may point at a larger file in the same format (see
/// `scripts/make_golden_fcpa.py --help`).
fn golden() -> Value {
    let path = match std::env::var_os("ARMAC_GOLDEN_FCPA") {
        Some(p) => PathBuf::from(p),
        None => common::data_file("golden_fcpa.json"),
    };
    common::json(&path)
}

fn check_facts(game: &dyn Game, g: &Value, ctx: &str) {
    assert_eq!(
        game.num_distinct_actions() as u64,
        g["num_distinct_actions"].as_u64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        game.max_chance_outcomes() as u64,
        g["max_chance_outcomes"].as_u64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        game.max_game_length() as u64,
        g["max_game_length"].as_u64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        game.min_utility(),
        g["min_utility"].as_f64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        game.max_utility(),
        g["max_utility"].as_f64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        game.information_state_tensor_size() as u64,
        g["information_state_tensor_size"].as_u64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        game.observation_tensor_size() as u64,
        g["observation_tensor_size"].as_u64().unwrap(),
        "{ctx}"
    );
}

fn check_step(game: &dyn Game, state: &dyn State, step: &Value, ctx: &str) {
    common::check_views(game, state, step, ctx, true, common::dense);
    match state.turn() {
        Turn::Terminal => {
            let want = [
                step["returns"][0].as_f64().unwrap(),
                step["returns"][1].as_f64().unwrap(),
            ];
            assert_eq!(state.returns(), want, "{ctx}: returns");
            assert!(state.chance_outcomes().is_empty(), "{ctx}");
        }
        Turn::Chance => {
            let p = step["chance_prob"].as_f64().unwrap();
            let got = state.chance_outcomes();
            let want = common::usizes(&step["legal_actions"]);
            assert_eq!(
                got.iter().map(|o| o.0).collect::<Vec<_>>(),
                want,
                "{ctx}: chance outcomes"
            );
            assert!(got.iter().all(|o| o.1 == p), "{ctx}: chance probabilities");
            let cards: String = want
                .iter()
                .map(|&a| {
                    let s = state.action_to_string(None, a);
                    s.strip_prefix("player=-1 move=Deal ")
                        .unwrap_or_else(|| panic!("{ctx}: chance action string {s}"))
                        .to_string()
                })
                .collect();
            assert_eq!(
                cards,
                step["deal_cards"].as_str().unwrap(),
                "{ctx}: dealt cards"
            );
        }
        Turn::Player(p) => {
            let strings: Vec<String> = state
                .legal_actions()
                .iter()
                .map(|&a| state.action_to_string(Some(p), a))
                .collect();
            let want: Vec<&str> = step["action_strings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            assert_eq!(strings, want, "{ctx}: action strings");
        }
    }
}

/// Replays one recorded playout and checks every prefix.
fn check_playout(game: &dyn Game, po: &Value, ctx: &str) {
    let actions = common::usizes(&po["actions"]);
    let steps = po["steps"].as_array().unwrap();
    assert_eq!(steps.len(), actions.len() + 1, "{ctx}");
    let mut state = game.new_initial_state();
    for (k, step) in steps.iter().enumerate() {
        let here = format!("{ctx} after {:?}", &actions[..k]);
        check_step(game, state.as_ref(), step, &here);
        if k < actions.len() {
            let player = match state.turn() {
                Turn::Player(p) => Some(p),
                _ => None,
            };
            assert_eq!(
                state.action_to_string(player, actions[k]),
                step["action_taken_string"].as_str().unwrap(),
                "{here}: taken action string"
            );
            state
                .try_apply(actions[k])
                .unwrap_or_else(|e| panic!("{here}: {e}"));
        }
    }
    let want = [
        po["returns"][0].as_f64().unwrap(),
        po["returns"][1].as_f64().unwrap(),
    ];
    assert_eq!(state.returns(), want, "{ctx}: final returns");
}

#[test]
fn fcpa_static_facts_and_game_string() {
    let data = golden();
    let game = load_game(data["load_game_string"].as_str().unwrap()).unwrap();
    check_facts(game.as_ref(), &data["game"], "fcpa");
    assert_eq!(game.load_string(), data["game_string"].as_str().unwrap());
    let alias = load_game("hunl_fcpa").unwrap();
    assert_eq!(alias.load_string(), data["game_string"].as_str().unwrap());
}

#[test]
fn fcpa_playouts_match_openspiel() {
    let data = golden();
    let game = load_game("hunl_fcpa").unwrap();
    let playouts = data["playouts"].as_array().unwrap();
    assert!(playouts.len() >= 200);
    for (i, po) in playouts.iter().enumerate() {
        let ctx = format!("fcpa playout {i} ({})", po["policy"].as_str().unwrap());
        check_playout(game.as_ref(), po, &ctx);
    }
}

#[test]
fn fcpa_scenarios_match_openspiel() {
    let data = golden();
    let game = load_game("hunl_fcpa").unwrap();
    let scenarios = data["scenarios"].as_array().unwrap();
    assert!(!scenarios.is_empty());
    for sc in scenarios {
        let ctx = format!("scenario {}", sc["name"].as_str().unwrap());
        check_playout(game.as_ref(), sc, &ctx);
    }
}

#[test]
fn other_configurations_match_openspiel() {
    let data = golden();
    for v in data["variants"].as_array().unwrap() {
        let key = v["key"].as_str().unwrap();
        let game = load_game(v["load_game_string"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        check_facts(game.as_ref(), &v["game"], key);
        assert_eq!(
            game.load_string(),
            v["game_string"].as_str().unwrap(),
            "{key}"
        );
        for (i, po) in v["playouts"].as_array().unwrap().iter().enumerate() {
            check_playout(game.as_ref(), po, &format!("{key} playout {i}"));
        }
    }
}

/// Checks one step of the shared reference file: it has fewer fields (tensors only at
/// decision nodes of the playouts) but also the ACPC view of the state.
fn check_reference_step(state: &UniversalPokerState, step: &Value, ctx: &str) {
    let cp = step["current_player"].as_i64().unwrap() as i32;
    assert_eq!(state.turn().openspiel_id(), cp, "{ctx}: current player");
    let spent = state.contributions();
    assert_eq!(
        spent[0] as i64,
        step["player_contributions"][0].as_i64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        spent[1] as i64,
        step["player_contributions"][1].as_i64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        state.pot_size() as i64,
        step["pot_size"].as_i64().unwrap(),
        "{ctx}: pot"
    );
    assert_eq!(
        state.betting_history(),
        step["betting_history"].as_str().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        state.board_string(),
        step["board_cards"].as_str().unwrap(),
        "{ctx}: board"
    );
    for p in 0..2 {
        assert_eq!(
            state.hand_string(p),
            step["player_hands"][p].as_str().unwrap(),
            "{ctx}: hand"
        );
    }
    assert_eq!(
        state.acpc_state_string(),
        step["acpc_state"].as_str().unwrap(),
        "{ctx}: acpc"
    );
    if let Some(n) = step.get("num_chance_outcomes") {
        assert_eq!(
            state.chance_outcomes().len() as u64,
            n.as_u64().unwrap(),
            "{ctx}"
        );
    }
    if let Some(legal) = step.get("legal_actions") {
        assert_eq!(
            state.legal_actions(),
            common::usizes(legal),
            "{ctx}: legal actions"
        );
        let p = state.turn().openspiel_id() as usize;
        let strings: Vec<String> = state
            .legal_actions()
            .iter()
            .map(|&a| state.action_to_string(Some(p), a))
            .collect();
        let want: Vec<String> = step["legal_action_strings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert_eq!(strings, want, "{ctx}: action strings");
        assert_eq!(
            state.information_state_string(p),
            step["information_state_string"].as_str().unwrap(),
            "{ctx}: infostate"
        );
        assert_eq!(
            state.observation_string(p),
            step["observation_string"].as_str().unwrap(),
            "{ctx}"
        );
    }
    if let Some(t) = step.get("information_state_tensor") {
        let p = state.turn().openspiel_id() as usize;
        let mut buf = vec![0.0; 175];
        state.information_state_tensor(p, &mut buf);
        assert_eq!(buf, common::floats(t, 175), "{ctx}: infostate tensor");
        let mut buf = vec![0.0; 108];
        state.observation_tensor(p, &mut buf);
        assert_eq!(
            buf,
            common::floats(&step["observation_tensor"], 108),
            "{ctx}: observation tensor"
        );
    }
    if let Some(r) = step.get("returns") {
        let want = [r[0].as_f64().unwrap(), r[1].as_f64().unwrap()];
        assert_eq!(state.returns(), want, "{ctx}: returns");
    }
}

#[test]
fn shared_reference_scenarios_and_playouts() {
    let data = common::json(&common::shared_reference("hunl_fcpa.json"));
    let game = UniversalPokerGame::from_string(data["load_game_string"].as_str().unwrap()).unwrap();
    assert_eq!(game.load_string(), data["game_str"].as_str().unwrap());
    let mut count = 0;
    for list in ["scenarios", "playouts"] {
        for (i, po) in data[list].as_array().unwrap().iter().enumerate() {
            let ctx = format!("reference {list} {i}");
            let actions = common::usizes(&po["actions"]);
            let steps = po["steps"].as_array().unwrap();
            let mut state = game.initial_state();
            for (k, step) in steps.iter().enumerate() {
                let here = format!("{ctx} after {:?}", &actions[..k]);
                check_reference_step(&state, step, &here);
                if k < actions.len() {
                    let player = match state.turn() {
                        Turn::Player(p) => Some(p),
                        _ => None,
                    };
                    assert_eq!(
                        state.action_to_string(player, actions[k]),
                        step["action_taken_string"].as_str().unwrap(),
                        "{here}"
                    );
                    state
                        .try_apply(actions[k])
                        .unwrap_or_else(|e| panic!("{here}: {e}"));
                }
                count += 1;
            }
            let want = [
                po["returns"][0].as_f64().unwrap(),
                po["returns"][1].as_f64().unwrap(),
            ];
            assert_eq!(state.returns(), want, "{ctx}");
        }
    }
    assert!(count > 100);
}

#[test]
fn fcpa_conformance() {
    let game = load_game("hunl_fcpa").unwrap();
    check_game(game.as_ref(), 5000, 2026).unwrap();
}

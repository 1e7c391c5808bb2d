//! Golden tests: every game replays OpenSpiel's seeded playouts (tests/data/golden_*.json,
//! written by scripts/make_golden_games.py) and must reproduce every string, tensor, legal
//! action list, chance distribution and return exactly.

mod common;

use armac::game::{Game, State, Turn};
use armac::games::load_game;
use serde_json::Value;

fn load(key: &str) -> Value {
    common::json(&common::data_file(&format!("golden_{key}.json")))
}

fn check_step(game: &dyn Game, state: &dyn State, step: &Value, ctx: &str) {
    common::check_views(game, state, step, ctx, false, common::floats);
    match state.turn() {
        Turn::Terminal => {
            let r = state.returns();
            let want = common::floats(&step["returns"], 2);
            assert_eq!(
                [r[0] as f32, r[1] as f32],
                [want[0], want[1]],
                "{ctx}: returns"
            );
            assert_eq!(
                r[0],
                step["returns"][0].as_f64().unwrap(),
                "{ctx}: returns (f64)"
            );
        }
        Turn::Chance => {
            let got = state.chance_outcomes();
            let want = step["chance_outcomes"].as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{ctx}: chance outcome count");
            for ((a, p), w) in got.iter().zip(want) {
                assert_eq!(*a as u64, w[0].as_u64().unwrap(), "{ctx}: chance action");
                assert!(
                    (p - w[1].as_f64().unwrap()).abs() < 1e-15,
                    "{ctx}: chance prob {p} vs {}",
                    w[1]
                );
            }
            for (a, s) in state
                .legal_actions()
                .iter()
                .zip(step["action_strings"].as_array().unwrap())
            {
                assert_eq!(
                    state.action_to_string(None, *a),
                    s.as_str().unwrap(),
                    "{ctx}: chance action string"
                );
            }
        }
        Turn::Player(p) => {
            for (a, s) in state
                .legal_actions()
                .iter()
                .zip(step["action_strings"].as_array().unwrap())
            {
                assert_eq!(
                    state.action_to_string(Some(p), *a),
                    s.as_str().unwrap(),
                    "{ctx}: action string"
                );
            }
        }
    }
}

fn run_golden(key: &str) {
    let data = load(key);
    let game = load_game(data["load_game_string"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{key}: {e}"));
    let g = &data["game"];
    assert_eq!(
        game.num_distinct_actions() as u64,
        g["num_distinct_actions"].as_u64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.max_chance_outcomes() as u64,
        g["max_chance_outcomes"].as_u64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.max_game_length() as u64,
        g["max_game_length"].as_u64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.min_utility(),
        g["min_utility"].as_f64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.max_utility(),
        g["max_utility"].as_f64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.information_state_tensor_size() as u64,
        g["information_state_tensor_size"].as_u64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.observation_tensor_size() as u64,
        g["observation_tensor_size"].as_u64().unwrap(),
        "{key}"
    );
    assert_eq!(
        game.provides_observation_string(),
        g["provides_observation_string"].as_bool().unwrap(),
        "{key}"
    );
    let playouts = data["playouts"].as_array().unwrap();
    assert!(!playouts.is_empty());
    for (i, po) in playouts.iter().enumerate() {
        let actions = common::usizes(&po["actions"]);
        let steps = po["steps"].as_array().unwrap();
        assert_eq!(steps.len(), actions.len() + 1);
        let mut state = game.new_initial_state();
        for (k, step) in steps.iter().enumerate() {
            let ctx = format!("{key} playout {i} after {:?}", &actions[..k]);
            check_step(game.as_ref(), state.as_ref(), step, &ctx);
            if k < actions.len() {
                state
                    .try_apply(actions[k])
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            }
        }
    }
}

macro_rules! golden {
    ($($name:ident),*) => { $( #[test] fn $name() { run_golden(stringify!($name)); } )* };
}

golden!(
    kuhn_poker,
    leduc_poker,
    liars_dice,
    liars_dice_2dice,
    liars_dice_4sides,
    goofspiel5,
    goofspiel4
);

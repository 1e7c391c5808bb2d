//! One conformance suite for every game: seeded random playouts checking the contracts of
//! [`Game`] and [`State`], plus the consistency of the public/private factorisation.

use super::{Game, Player, State, Turn};
use crate::util::SplitMix64;
use std::collections::HashMap;

/// Checks the public/private factorisation across many states: the information state of a
/// player determines its (public state, private state), and for the player to act the pair
/// determines the information state. Used on sampled states by [`check_game`] and on whole
/// trees by the games' own tests.
#[derive(Debug, Default)]
pub struct FactorisationCheck {
    info_to_pp: HashMap<(Player, String), (String, usize)>,
    pp_to_info: HashMap<(Player, String, usize), String>,
}

impl FactorisationCheck {
    /// Records `state` and fails on the first contradiction with the states seen before.
    pub fn observe(&mut self, state: &dyn State) -> Result<(), String> {
        let pubs = state.public_state_string();
        for p in 0..2 {
            let info = state.information_state_string(p);
            let priv_ = state.private_state(p);
            if let Some(prev) = self
                .info_to_pp
                .insert((p, info.clone()), (pubs.clone(), priv_))
                && prev != (pubs.clone(), priv_)
            {
                return Err(format!(
                    "player {p} infostate {info:?} seen with public/private {prev:?} and {:?}",
                    (pubs, priv_)
                ));
            }
            if state.turn() == Turn::Player(p)
                && let Some(prev) = self
                    .pp_to_info
                    .insert((p, pubs.clone(), priv_), info.clone())
                && prev != info
            {
                return Err(format!(
                    "player {p}: public state {pubs:?} with private {priv_} maps to infostates {prev:?} and {info:?}"
                ));
            }
        }
        Ok(())
    }
}

/// Runs `playouts` random playouts (chance by its probabilities, players uniform) and returns
/// the first violated contract, naming the history where it happened.
pub fn check_game(game: &dyn Game, playouts: usize, seed: u64) -> Result<(), String> {
    let mut rng = SplitMix64::new(seed);
    let mut factorisation = FactorisationCheck::default();
    for _ in 0..playouts {
        let mut state = game.new_initial_state();
        let mut moves = 0usize;
        let mut acts_again = ActsAgainCheck::default();
        loop {
            check_state(game, state.as_ref()).map_err(|e| {
                format!(
                    "{}: at history [{}]: {e}",
                    game.load_string(),
                    super::history_string(state.history())
                )
            })?;
            factorisation.observe(state.as_ref())?;
            acts_again
                .observe(state.as_ref())
                .map_err(|e| format!("{}: {e}", game.load_string()))?;
            match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    let outcomes = state.chance_outcomes();
                    let w: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
                    let a = outcomes[rng.weighted(&w)].0;
                    state.apply_action(a);
                }
                Turn::Player(_) => {
                    let legal = state.legal_actions();
                    let a = legal[rng.below(legal.len())];
                    state.apply_action(a);
                    moves += 1;
                    if moves > game.max_game_length() {
                        return Err(format!(
                            "more than max_game_length = {} player moves",
                            game.max_game_length()
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks [`State::player_acts_again`] along one playout: after a state that says no player
/// acts again no decision comes, and after one that says a player does a decision comes
/// before the end.
#[derive(Debug, Default)]
struct ActsAgainCheck {
    /// The first history of the playout that said no player acts again.
    said_no: Option<String>,
    /// The first history since the last decision that said a player acts again.
    said_yes: Option<String>,
}

impl ActsAgainCheck {
    fn observe(&mut self, state: &dyn State) -> Result<(), String> {
        let here = || super::history_string(state.history());
        match state.player_acts_again() {
            Some(false) if self.said_no.is_none() => self.said_no = Some(here()),
            Some(true) if self.said_yes.is_none() => self.said_yes = Some(here()),
            _ => {}
        }
        match state.turn() {
            Turn::Player(_) => {
                if let Some(h) = &self.said_no {
                    return Err(format!(
                        "[{h}] says no player acts again, yet a player acts at [{}]",
                        here()
                    ));
                }
                self.said_yes = None;
            }
            Turn::Terminal => {
                if let Some(h) = &self.said_yes {
                    return Err(format!(
                        "[{h}] says a player acts again, yet the game ends at [{}] first",
                        here()
                    ));
                }
            }
            Turn::Chance => {}
        }
        Ok(())
    }
}

/// Checks the contracts that hold at a single state.
pub fn check_state(game: &dyn Game, state: &dyn State) -> Result<(), String> {
    let legal = state.legal_actions();
    if legal.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!("legal actions not strictly ascending: {legal:?}"));
    }
    match state.turn() {
        Turn::Terminal => {
            if !legal.is_empty() {
                return Err("terminal state has legal actions".into());
            }
            let r = state.returns();
            if (r[0] + r[1]).abs() > 1e-9 {
                return Err(format!("returns not zero-sum: {r:?}"));
            }
            for x in r {
                if x < game.min_utility() - 1e-9 || x > game.max_utility() + 1e-9 {
                    return Err(format!("return {x} outside [min_utility, max_utility]"));
                }
            }
        }
        Turn::Chance => {
            let outcomes = state.chance_outcomes();
            let total: f64 = outcomes.iter().map(|o| o.1).sum();
            if (total - 1.0).abs() > 1e-12 {
                return Err(format!("chance probabilities sum to {total}"));
            }
            if outcomes
                .iter()
                .any(|o| o.1 <= 0.0 || o.0 >= game.max_chance_outcomes())
            {
                return Err(format!("bad chance outcome in {outcomes:?}"));
            }
            let actions: Vec<_> = outcomes.iter().map(|o| o.0).collect();
            if actions != legal {
                return Err(format!(
                    "chance outcomes {actions:?} differ from legal actions {legal:?}"
                ));
            }
        }
        Turn::Player(p) => {
            if p > 1 {
                return Err(format!("player id {p}"));
            }
            if legal.is_empty() {
                return Err("decision node without legal actions".into());
            }
            if legal.iter().any(|&a| a >= game.num_distinct_actions()) {
                return Err(format!("action >= num_distinct_actions in {legal:?}"));
            }
            if !state.chance_outcomes().is_empty() {
                return Err("decision node has chance outcomes".into());
            }
        }
    }
    check_private_variants(state)?;
    let copy = state.clone_box();
    for p in 0..2 {
        if state.private_state(p) >= state.num_private_states(p) {
            return Err(format!("private_state({p}) out of range"));
        }
        if copy.information_state_string(p) != state.information_state_string(p) {
            return Err("a clone has another information state string".into());
        }
        for (len, scale, observation) in [
            (
                game.information_state_tensor_size(),
                game.information_state_tensor_scale(),
                false,
            ),
            (
                game.observation_tensor_size(),
                game.observation_tensor_scale(),
                true,
            ),
        ] {
            let what = if observation {
                "observation"
            } else {
                "information state"
            };
            let mut buf = vec![f32::NAN; len];
            if observation {
                state.observation_tensor(p, &mut buf);
            } else {
                state.information_state_tensor(p, &mut buf);
            }
            if buf.iter().any(|x| !x.is_finite()) {
                return Err(format!(
                    "{what} tensor of player {p} leaves entries unwritten"
                ));
            }
            let scale = scale.unwrap_or_else(|| vec![1.0; len]);
            if scale.len() != len {
                return Err(format!(
                    "{what} tensor scale has {} entries, not {len}",
                    scale.len()
                ));
            }
            if let Some(i) = (0..len).find(|&i| buf[i].abs() > scale[i]) {
                return Err(format!(
                    "{what} tensor of player {p}: entry {i} = {} exceeds its scale {}",
                    buf[i], scale[i]
                ));
            }
        }
    }
    if copy.public_state_string() != state.public_state_string() {
        return Err("a clone has another public state".into());
    }
    Ok(())
}

/// [`State::with_private_state`] at a few of the alternatives a player has: the history
/// exists, holds that private state, and looks the same to the other player and in public;
/// the player's own private state gives back this history (before the end; at chance nodes
/// the deck, so the outcomes, differ).
fn check_private_variants(state: &dyn State) -> Result<(), String> {
    if state.is_terminal() {
        // Terminals may show the cards (and their returns differ).
        return Ok(());
    }
    for p in 0..2 {
        let alts = state.private_state_alternatives(p);
        if alts.windows(2).any(|w| w[0] >= w[1]) || alts.contains(&state.private_state(p)) {
            return Err(format!(
                "private_state_alternatives({p}) unsorted or with its own"
            ));
        }
        if alts.is_empty() {
            continue;
        }
        let own = state
            .with_private_state(p, state.private_state(p))
            .ok_or_else(|| format!("with_private_state({p}, own) is None"))?;
        if (0..2).any(|q| own.information_state_string(q) != state.information_state_string(q)) {
            return Err(format!("with_private_state({p}, own) is another history"));
        }
        for &alt in [alts[0], alts[alts.len() / 2], alts[alts.len() - 1]].iter() {
            let v = state
                .with_private_state(p, alt)
                .ok_or_else(|| format!("with_private_state({p}, {alt}) is None"))?;
            if v.private_state(p) != alt
                || v.information_state_string(1 - p) != state.information_state_string(1 - p)
                || v.public_state_string() != state.public_state_string()
                || (!state.is_chance() && v.legal_actions() != state.legal_actions())
                || v.information_state_string(p) == state.information_state_string(p)
            {
                return Err(format!(
                    "with_private_state({p}, {alt}) is not the same history with another deal: \
                     {:?}",
                    v.history()
                ));
            }
        }
    }
    Ok(())
}

//! Student of Games' search on Hold'em as a [`Policy`]: continual re-solving on the factored
//! layout ([`crate::search::holdem`]) with a CVPN checkpoint valuing the depth-limit leaves
//! (`sog:DIR` of `armac-eval` for `universal_poker` games).
//!
//! A re-solving chain is stateful, the [`Policy`] interface is not: the policy therefore
//! rebuilds the chain of the acting player from the public history of the queried state,
//! searching at each of that player's earlier decisions. Every search is deterministic and
//! depends only on public information, so results are cached by (player, public history):
//! the hand's earlier searches are hits, and the same public line in later hands is free.

use super::RunError;
use crate::game::{Player, State, Turn};
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::nn::cvpn::{Cvpn, CvpnForward, CvpnPokerLeaves, CvpnSnapshot};
use crate::nn::public::factored::PokerLeaves;
use crate::policy::{Policy, PolicyError};
use crate::search::holdem::{
    HoldemLeaves, HoldemResolver, HoldemSearchConfig, HoldemSearchError, public_edges, state_at,
};
use crate::tree::poker::{PokerEdge, PokerLayout};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Leaf values of Hold'em search from a CVPN (one [`CvpnPokerLeaves`] per search tree).
#[derive(Clone)]
pub struct CvpnHoldemLeaves {
    net: Arc<CvpnSnapshot>,
}

impl CvpnHoldemLeaves {
    /// Leaves valued by `net`.
    pub fn new(net: Arc<CvpnSnapshot>) -> Self {
        CvpnHoldemLeaves { net }
    }
}

impl HoldemLeaves for CvpnHoldemLeaves {
    fn leaves_for(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
    ) -> Result<Box<dyn PokerLeaves>, HoldemSearchError> {
        let l = CvpnPokerLeaves::new(self.net.clone(), layout, root)
            .map_err(|e| HoldemSearchError::Leaf(e.to_string()))?;
        Ok(Box::new(l))
    }

    fn root_values(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
        ranges: [&[f64]; 2],
    ) -> Result<[Vec<f64>; 2], HoldemSearchError> {
        let mut l = CvpnPokerLeaves::at_nodes(self.net.clone(), layout, root, vec![0])
            .map_err(|e| HoldemSearchError::Leaf(e.to_string()))?;
        Ok(l.evaluate(layout, &[0], ranges))
    }
}

/// One cached search: the chain after it, and its rows.
struct Cached {
    chain: HoldemResolver,
    actions: Vec<crate::game::Action>,
    rows: Vec<Vec<f64>>,
}

/// Cached searches by (acting player, public edges of the decision).
type SearchCache = HashMap<(Player, Vec<PokerEdge>), Arc<Cached>>;

/// Above this many cached searches the cache is cleared.
const CACHE_LIMIT: usize = 50_000;

/// The continual re-solving policy of both players (see the module docs).
pub struct HoldemSearchPolicy {
    game: UniversalPokerGame,
    leaves: Mutex<CvpnHoldemLeaves>,
    config: HoldemSearchConfig,
    /// Layout hand position of each hole index.
    position: HashMap<u32, usize>,
    cache: Mutex<SearchCache>,
    name: String,
    searches: std::sync::atomic::AtomicU64,
}

impl HoldemSearchPolicy {
    /// The policy for `game` with `net` at the depth limit; errors name a network of another
    /// game or size, and bad settings.
    pub fn new(
        game: UniversalPokerGame,
        net: Arc<CvpnSnapshot>,
        config: HoldemSearchConfig,
        name: String,
    ) -> Result<Self, RunError> {
        config
            .validate()
            .map_err(|e| RunError::Usage(e.to_string()))?;
        let mut root = game.initial_state();
        let cfg = game.config();
        for o in 0..2 * cfg.num_hole {
            root.try_apply(o)?;
        }
        // The preflop tree without its leaves' values: the hand list and a size check.
        let layout = PokerLayout::from_state_limited(&root, config.max_nodes, true)
            .map_err(|e| RunError::Usage(format!("{name}: {e}")))?;
        let c = net.config();
        if c.game != layout.game {
            return Err(RunError::Usage(format!(
                "{name}: the CVPN was trained on {}, not on {}",
                c.game, layout.game
            )));
        }
        CvpnPokerLeaves::new(net.clone(), &layout, &root)
            .map_err(|e| RunError::Usage(format!("{name}: incompatible CVPN: {e}")))?;
        let position = layout
            .hole_index
            .iter()
            .enumerate()
            .map(|(x, &h)| (h, x))
            .collect();
        Ok(HoldemSearchPolicy {
            game,
            leaves: Mutex::new(CvpnHoldemLeaves::new(net)),
            config,
            position,
            cache: Mutex::new(HashMap::new()),
            name,
            searches: Default::default(),
        })
    }

    /// Searches run so far (cache misses).
    pub fn searches(&self) -> u64 {
        self.searches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The cached search of `p` at the public state `edges` (run, with the searches at `p`'s
    /// earlier decisions, where missing).
    fn search_at(
        &self,
        p: Player,
        edges: &[PokerEdge],
        template: &UniversalPokerState,
    ) -> Result<Arc<Cached>, HoldemSearchError> {
        let key = (p, edges.to_vec());
        if let Some(c) = self.cache.lock().expect("cache lock").get(&key) {
            return Ok(c.clone());
        }
        // The player's previous decision in this hand, if any.
        let mut chain = None;
        for k in (0..edges.len()).rev() {
            let s = state_at(template, &edges[..k])?;
            if s.turn() == Turn::Player(p) {
                chain = Some(self.search_at(p, &edges[..k], template)?.chain.clone());
                break;
            }
        }
        let mut chain = match chain {
            Some(c) => c,
            None => HoldemResolver::new(p, self.config)?,
        };
        let state = state_at(template, edges)?;
        let dec = {
            let mut leaves = self.leaves.lock().expect("leaves lock");
            chain.act(&state, &mut *leaves)?
        };
        self.searches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let c = Arc::new(Cached {
            chain,
            actions: dec.actions,
            rows: dec.rows,
        });
        let mut cache = self.cache.lock().expect("cache lock");
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, c.clone());
        Ok(c)
    }
}

impl Policy for HoldemSearchPolicy {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        let fail = |reason: String| PolicyError::Failed {
            policy: self.name.clone(),
            reason,
        };
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let mut s = self.game.initial_state();
        for &a in state.history() {
            s.try_apply(a).map_err(|e| {
                fail(format!(
                    "replaying the state in {}: {e}",
                    self.game.config().load_string
                ))
            })?;
        }
        let edges = public_edges(&s).map_err(|e| fail(e.to_string()))?;
        let c = self
            .search_at(p, &edges, &s)
            .map_err(|e| fail(e.to_string()))?;
        let legal = s.legal_actions();
        if legal != c.actions {
            return Err(fail(format!(
                "the search's actions {:?} differ from the legal actions {legal:?}",
                c.actions
            )));
        }
        let x = *self
            .position
            .get(&(s.private_state(p) as u32))
            .ok_or_else(|| fail("the player's hand is not in the layout".into()))?;
        Ok(c.rows[x].clone())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

impl crate::eval::lbr::RangePolicy for HoldemSearchPolicy {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<crate::eval::lbr::ActionProbs>, PolicyError> {
        let fail = |reason: String| PolicyError::Failed {
            policy: self.name.clone(),
            reason,
        };
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let edges = public_edges(state).map_err(|e| fail(e.to_string()))?;
        let c = self
            .search_at(p, &edges, state)
            .map_err(|e| fail(e.to_string()))?;
        hands
            .iter()
            .map(|&h| {
                let x = *self
                    .position
                    .get(&u32::from(h))
                    .ok_or_else(|| fail(format!("hand {h} is not in the layout")))?;
                let mut row = [0.0; 4];
                for (&a, &q) in c.actions.iter().zip(&c.rows[x]) {
                    if a >= row.len() {
                        return Err(fail(format!("action {a} is not an FCPA action")));
                    }
                    row[a] = q;
                }
                Ok(row)
            })
            .collect()
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

/// The Hold'em search policy of `spec` = `sog:DIR` for `game`: DIR is a CVPN checkpoint
/// directory (what [`Cvpn::save`] writes; a SoG run's `cvpn/` folder). Errors name a
/// missing directory or checkpoint, a network of another game, and one of the wrong sizes.
pub fn load_holdem_search_policy(
    dir: &Path,
    game: &UniversalPokerGame,
    config: HoldemSearchConfig,
) -> Result<HoldemSearchPolicy, RunError> {
    let name = format!("sog:{}", dir.display());
    if !dir.is_dir() {
        return Err(RunError::Usage(format!(
            "{name}: no such directory (expected a CVPN checkpoint directory)"
        )));
    }
    let cfg = Cvpn::recorded_config(dir)
        .map_err(|e| RunError::Usage(format!("{name}: not a CVPN checkpoint: {e}")))?;
    let want = &game.config().load_string;
    if &cfg.game != want {
        return Err(RunError::Usage(format!(
            "{name}: the CVPN was trained on {}, not on {want}",
            cfg.game
        )));
    }
    let device = crate::nn::select_device("flex").map_err(|e| RunError::Usage(e.to_string()))?;
    let net = Cvpn::load(dir, &cfg, &device, 1e-3)
        .map_err(|e| RunError::Usage(format!("{name}: {e}")))?;
    let game = UniversalPokerGame::from_string(want)?;
    HoldemSearchPolicy::new(game, Arc::new(net.snapshot()), config, name)
}

//! Student of Games' search on Hold'em as a [`Policy`]: continual re-solving on the factored
//! layout ([`crate::search::holdem`]) with a CVPN checkpoint valuing the depth-limit leaves
//! (`sog:DIR` of `armac-eval` for `universal_poker` games).
//!
//! A re-solving chain is stateful, the [`Policy`] interface is not: the policy therefore
//! rebuilds the chain of the acting player from the public history of the queried state,
//! searching at each of that player's earlier decisions. Every search is deterministic and
//! depends only on public information, so results are cached by (player, public history):
//! the hand's earlier searches are hits, and the same public line in later hands is free.
//! The cache counts the bytes its searches hold (each one's tree, ranges and rows) and is
//! emptied when the next search would take it past its budget
//! ([`HoldemSearchPolicy::with_cache_bytes`], [`DEFAULT_CACHE_BYTES`] by default): a search
//! left out is run again, with the same answer, when it is needed.

use crate::game::{Player, State, Turn};
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use crate::nn::cvpn::{CvpnForward, CvpnPokerLeaves, CvpnSnapshot};
use crate::nn::public::factored::PokerLeaves;
use crate::policy::{Policy, PolicyError};
use crate::rl::error::TrainError;
use crate::search::holdem::{
    HoldemLeaves, HoldemResolver, HoldemSearchConfig, HoldemSearchError, public_edges, state_at,
};
use crate::search::runout::{RunoutCache, RunoutLeaves};
use crate::tree::poker::{PokerEdge, PokerLayout};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Leaf values of Hold'em search from a CVPN (one [`CvpnPokerLeaves`] per search tree).
#[derive(Clone)]
pub struct CvpnHoldemLeaves {
    net: Arc<CvpnSnapshot>,
    /// Run-outs of the boards met so far; `None`: all-in leaves are the CVPN's too.
    runouts: Option<RunoutCache>,
}

impl CvpnHoldemLeaves {
    /// Leaves valued by `net`, except those where a player is all in: those over
    /// `runout_boards` run-outs of the board ([`RunoutLeaves`]; 0: by `net` too).
    pub fn new(net: Arc<CvpnSnapshot>, runout_boards: usize) -> Self {
        let runouts = (runout_boards > 0).then(|| RunoutCache::new(runout_boards));
        CvpnHoldemLeaves { net, runouts }
    }
}

impl HoldemLeaves for CvpnHoldemLeaves {
    fn leaves_for(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
    ) -> Result<Box<dyn PokerLeaves>, HoldemSearchError> {
        let leaf_err = |e: crate::nn::armac::NnError| HoldemSearchError::Leaf(e.to_string());
        let Some(cache) = self.runouts.as_mut() else {
            let l = CvpnPokerLeaves::new(self.net.clone(), layout, root).map_err(leaf_err)?;
            return Ok(Box::new(l));
        };
        let net = &self.net;
        let leaves = RunoutLeaves::new(layout, root.config(), cache, |others| {
            CvpnPokerLeaves::at_nodes(net.clone(), layout, root, others)
                .map(|l| Box::new(l) as Box<dyn PokerLeaves>)
                .map_err(leaf_err)
        })?;
        Ok(Box::new(leaves))
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

impl Cached {
    /// Bytes held by the entry and its key of `key_edges` public edges.
    fn bytes(&self, key_edges: &[PokerEdge]) -> usize {
        use std::mem::size_of;
        let rows: usize = self
            .rows
            .iter()
            .map(|r| size_of::<Vec<f64>>() + r.capacity() * size_of::<f64>())
            .sum();
        let key: usize = key_edges
            .iter()
            .map(|e| size_of::<PokerEdge>() + e.heap_bytes())
            .sum();
        size_of::<Self>()
            + self.chain.heap_bytes()
            + self.actions.capacity() * size_of::<crate::game::Action>()
            + rows
            + key
    }
}

/// The cache's default budget: 1 GiB.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Cached searches by (acting player, public edges of the decision), and the bytes they hold.
#[derive(Default)]
struct SearchCache {
    map: HashMap<(Player, Vec<PokerEdge>), (Arc<Cached>, usize)>,
    bytes: usize,
}

/// The continual re-solving policy of both players (see the module docs).
pub struct HoldemSearchPolicy {
    game: UniversalPokerGame,
    /// Leaf sources of the searches not running now (each running search takes one, or a
    /// clone of `template` when none is free, and puts it back), so searches of several
    /// threads run side by side; each keeps its own boards' run-outs.
    leaves: Mutex<Vec<CvpnHoldemLeaves>>,
    template: CvpnHoldemLeaves,
    config: HoldemSearchConfig,
    /// Layout hand position of each hole index.
    position: HashMap<u32, usize>,
    cache: Mutex<SearchCache>,
    cache_budget: usize,
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
    ) -> Result<Self, TrainError> {
        config
            .validate()
            .map_err(|e| TrainError::Usage(e.to_string()))?;
        let mut root = game.initial_state();
        let cfg = game.config();
        for o in 0..2 * cfg.num_hole {
            root.try_apply(o)?;
        }
        // The preflop tree without its leaves' values: the hand list and a size check.
        let layout = PokerLayout::from_state_limited(&root, config.max_nodes, true)
            .map_err(|e| TrainError::Usage(format!("{name}: {e}")))?;
        let c = net.config();
        if c.game != layout.game {
            return Err(TrainError::Usage(format!(
                "{name}: the CVPN was trained on {}, not on {}",
                c.game, layout.game
            )));
        }
        CvpnPokerLeaves::new(net.clone(), &layout, &root)
            .map_err(|e| TrainError::Usage(format!("{name}: incompatible CVPN: {e}")))?;
        let position = layout
            .hole_index
            .iter()
            .enumerate()
            .map(|(x, &h)| (h, x))
            .collect();
        Ok(HoldemSearchPolicy {
            game,
            leaves: Mutex::default(),
            template: CvpnHoldemLeaves::new(net, config.runout_boards),
            config,
            position,
            cache: Mutex::default(),
            cache_budget: DEFAULT_CACHE_BYTES,
            name,
            searches: Default::default(),
        })
    }

    /// Its value network as AIVAT's value estimate
    /// ([`crate::rl::sog::cvpn_values::CvpnValues`]).
    pub fn value_estimate(&self) -> crate::rl::sog::cvpn_values::CvpnValues {
        let mut hole_index = vec![0; self.position.len()];
        for (&h, &x) in &self.position {
            hole_index[x] = h;
        }
        crate::rl::sog::cvpn_values::CvpnValues::new(
            self.template.net.clone(),
            &self.game,
            &hole_index,
            format!("cvpn of {}", self.name),
        )
    }

    /// The policy with a cache of at most `bytes` (0 caches nothing: every query runs its
    /// player's chain of searches from the start of the hand).
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_budget = bytes;
        self
    }

    /// Searches run so far (cache misses).
    pub fn searches(&self) -> u64 {
        self.searches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes the cached searches hold now (at most the budget).
    pub fn cache_bytes(&self) -> usize {
        self.cache.lock().expect("cache lock").bytes
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
        if let Some((c, _)) = self.cache.lock().expect("cache lock").map.get(&key) {
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
        let free = self.leaves.lock().expect("leaves lock").pop();
        let mut leaves = free.unwrap_or_else(|| self.template.clone());
        let dec = chain.act(&state, &mut leaves);
        self.leaves.lock().expect("leaves lock").push(leaves);
        let dec = dec?;
        self.searches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let c = Arc::new(Cached {
            chain,
            actions: dec.actions,
            rows: dec.rows,
        });
        let bytes = c.bytes(edges);
        if bytes <= self.cache_budget {
            let mut cache = self.cache.lock().expect("cache lock");
            if cache.bytes + bytes > self.cache_budget {
                cache.map.clear();
                cache.bytes = 0;
            }
            // Another thread may have cached the same search meanwhile: count it once.
            if let Some((_, old)) = cache.map.insert(key, (c.clone(), bytes)) {
                cache.bytes -= old;
            }
            cache.bytes += bytes;
        }
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

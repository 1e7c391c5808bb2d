//! Depth-limited continual re-solving on the factored Hold'em layout (`search::holdem`), on the
//! tiny Hold'em of tests/holdem_factored.rs with an exact oracle at the depth limit: the
//! values of a full-layout CFR+ solve's average profile below each leaf.

use armac::cfr::SolverSpec;
use armac::eval::nash_conv;
use armac::game::State;
use armac::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use armac::nn::public::factored::{FactoredCfr, PokerLeaves};
use armac::search::holdem::{
    HoldemLeaves, HoldemResolver, HoldemSearchConfig, HoldemSearchError, public_edges,
    resolve_once, state_at,
};
use armac::tree::poker::{PokerEdge, PokerKind, PokerLayout};
use armac::tree::{PublicTree, TreeOptions, TreePolicy, uniform_tree_policy};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

#[path = "common/holdem_rows.rs"]
mod holdem_rows;
use holdem_rows::{Row, TINY, map_rows};

/// A full-layout solve of the whole hand; its average profile defines exact values below any
/// public state.
struct FullSolve {
    game: UniversalPokerGame,
    layout: Arc<PokerLayout>,
    avg: [Vec<f64>; 2],
    index: HashMap<Vec<PokerEdge>, usize>,
    spec: SolverSpec,
    solver: FactoredCfr,
}

impl FullSolve {
    fn new(iterations: usize) -> FullSolve {
        let game = UniversalPokerGame::from_string(TINY).unwrap();
        let layout = Arc::new(PokerLayout::from_state(&game.initial_state(), 100_000).unwrap());
        let spec = SolverSpec::named("cfr+").unwrap();
        let mut solver = FactoredCfr::new(layout.clone(), spec, None).unwrap();
        for _ in 0..iterations {
            solver.iterate();
        }
        let avg = [solver.average(0), solver.average(1)];
        solver.set_current(0, &avg[0]).unwrap();
        solver.set_current(1, &avg[1]).unwrap();
        let index = (0..layout.len()).map(|n| (layout.path(n), n)).collect();
        FullSolve {
            game,
            layout,
            avg,
            index,
            spec,
            solver,
        }
    }

    /// The profile on `sub`, a layout rooted at the public state with edges `root`.
    fn profile_on(&self, sub: &PokerLayout, root: &[PokerEdge]) -> [Vec<f64>; 2] {
        let np = sub.num_hands();
        std::array::from_fn(|p| {
            let mut out = vec![0.0; *sub.offsets[p].last().unwrap()];
            for (d, &n) in sub.decisions[p].iter().enumerate() {
                let mut path = root.to_vec();
                path.extend(sub.path(n as usize));
                let f = self.index[&path];
                let fd = self.layout.nodes[f].decision as usize;
                let (o, fo) = (sub.offsets[p][d], self.layout.offsets[p][fd]);
                let len = sub.nodes[n as usize].actions.len() * np;
                out[o..o + len].copy_from_slice(&self.avg[p][fo..fo + len]);
            }
            out
        })
    }

    /// A solver on the whole subgame below `state` playing the profile.
    fn below(&self, state: &UniversalPokerState) -> FactoredCfr {
        let sub = Arc::new(PokerLayout::from_state(state, 100_000).unwrap());
        let prof = self.profile_on(&sub, &public_edges(state).unwrap());
        let mut s = FactoredCfr::new(sub, self.spec, None).unwrap();
        s.set_current(0, &prof[0]).unwrap();
        s.set_current(1, &prof[1]).unwrap();
        s
    }
}

/// Both players' root CFVs of `s` for `ranges` (a player's values depend only on the other's
/// range, so an empty range is replaced and the values it determines are 0).
fn values_for(s: &mut FactoredCfr, ranges: [&[f64]; 2]) -> [Vec<f64>; 2] {
    let np = s.layout().num_hands();
    let mut empty = [false; 2];
    for i in 0..2 {
        if s.set_root_range(i, ranges[i]).is_err() {
            empty[i] = true;
            s.set_root_range(i, &s.layout().uniform_root_range())
                .unwrap();
        }
    }
    std::array::from_fn(|i| {
        if empty[1 - i] {
            vec![0.0; np]
        } else {
            s.root_cfvs(i)
        }
    })
}

/// The oracle's leaves: one solver per leaf of the search tree.
struct OracleLeaves {
    below: Vec<FactoredCfr>,
}

impl PokerLeaves for OracleLeaves {
    fn evaluate(
        &mut self,
        layout: &PokerLayout,
        leaves: &[u32],
        ranges: [&[f64]; 2],
    ) -> [Vec<f64>; 2] {
        let np = layout.num_hands();
        let mut out = [vec![0.0; leaves.len() * np], vec![0.0; leaves.len() * np]];
        for (k, (&n, s)) in leaves.iter().zip(self.below.iter_mut()).enumerate() {
            let r = [0, 1].map(|i| &ranges[i][k * np..(k + 1) * np]);
            let ratio = layout.nodes[n as usize].weight / s.layout().nodes[0].weight;
            let v = values_for(s, r);
            for i in 0..2 {
                for x in 0..np {
                    out[i][k * np + x] = v[i][x] * ratio;
                }
            }
        }
        out
    }
}

/// The exact oracle: the full solve's values below any state, counting its calls.
struct Oracle<'a> {
    full: &'a FullSolve,
    leaf_trees: usize,
    root_queries: usize,
}

impl HoldemLeaves for Oracle<'_> {
    fn leaves_for(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
    ) -> Result<Box<dyn PokerLeaves>, HoldemSearchError> {
        let edges = public_edges(root)?;
        let below = layout
            .leaves()
            .iter()
            .map(|&n| {
                let mut path = edges.clone();
                path.extend(layout.path(n as usize));
                self.full.below(&state_at(root, &path).unwrap())
            })
            .collect();
        self.leaf_trees += 1;
        Ok(Box::new(OracleLeaves { below }))
    }

    fn root_values(
        &mut self,
        _layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
        ranges: [&[f64]; 2],
    ) -> Result<[Vec<f64>; 2], HoldemSearchError> {
        self.root_queries += 1;
        Ok(values_for(&mut self.full.below(root), ranges))
    }
}

/// Relative gap `Σ r|a − b| / Σ r|b|`.
fn rel_gap(r: &[f64], a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = (0..r.len()).map(|x| r[x] * (a[x] - b[x]).abs()).sum();
    let den: f64 = (0..r.len()).map(|x| r[x] * b[x].abs()).sum();
    num / den
}

/// Re-solves the public state with edges `path` for `player` from the full solve's ranges and
/// values there; returns (relative gap of the opponent's root CFVs to the promised values,
/// gap of the re-solving player's expected value against the opponent's previous range,
/// relative to its mean absolute hand value) under
/// the re-solve's average profile. `gadget = false`: the opponent plays from the uniform range
/// instead (the control).
fn resolve_gaps(full: &mut FullSolve, path: &[PokerEdge], player: usize, gadget: bool) -> [f64; 2] {
    let n = full.index[path];
    let opp = 1 - player;
    let state = state_at(&full.game.initial_state(), path).unwrap();
    let own = full.solver.node_reach(player, n);
    let prev = full.solver.node_reach(opp, n);
    let fw = full.layout.nodes[n].weight;
    let want_opp = full.solver.node_cfvs(opp, n);
    let want_own = full.solver.node_cfvs(player, n);
    let config = HoldemSearchConfig {
        iterations: 400,
        ..HoldemSearchConfig::default()
    };
    let sub_weight = PokerLayout::from_state_limited(&state, 1000, true)
        .unwrap()
        .nodes[0]
        .weight;
    let ratio = sub_weight / fw;
    let w: Vec<f64> = want_opp.iter().map(|v| v * ratio).collect();
    let mut oracle = Oracle {
        full,
        leaf_trees: 0,
        root_queries: 0,
    };
    let g = gadget.then(|| (prev.clone(), w.clone()));
    let mut s = resolve_once(&state, player, own.clone(), g, &config, &mut oracle).unwrap();
    let avg = [s.average(0), s.average(1)];
    s.set_current(0, &avg[0]).unwrap();
    s.set_current(1, &avg[1]).unwrap();
    s.set_root_range(opp, &prev).unwrap();
    let got_opp = s.root_cfvs(opp);
    let got_own = s.root_cfvs(player);
    let w_own: Vec<f64> = want_own.iter().map(|v| v * ratio).collect();
    let dot = |r: &[f64], v: &[f64]| -> f64 { r.iter().zip(v).map(|(a, b)| a * b).sum() };
    let scale: f64 = own.iter().zip(&w_own).map(|(a, b)| a * b.abs()).sum();
    [
        rel_gap(&prev, &got_opp, &w),
        (dot(&own, &got_own) - dot(&own, &w_own)).abs() / scale,
    ]
}

#[test]
fn resolving_with_exact_leaves_and_the_full_solves_values_reproduces_them() {
    let t0 = Instant::now();
    let mut full = FullSolve::new(1000);
    let t_full = t0.elapsed().as_secs_f64();
    // The hand's start (one leaf: the flop deal after call, check), a flop state after
    // call, check and the flop of cards 0, 4, 8, and that flop after player 0's bet.
    let flop = vec![
        PokerEdge::Action(1),
        PokerEdge::Action(1),
        PokerEdge::Deal(vec![0, 4, 8]),
    ];
    assert!(matches!(
        full.layout.nodes[full.index[&flop]].kind,
        PokerKind::Decision(_)
    ));
    let t0 = Instant::now();
    let mut report = Vec::new();
    let mut bet = flop.clone();
    bet.push(PokerEdge::Action(2));
    assert!(matches!(
        full.layout.nodes[full.index[&bet]].kind,
        PokerKind::Decision(1)
    ));
    for (name, path) in [("root", vec![]), ("flop", flop), ("flop bet", bet)] {
        for player in 0..2 {
            let with = resolve_gaps(&mut full, &path, player, true);
            let without = resolve_gaps(&mut full, &path, player, false);
            report.push(format!(
                "{name} p{player}: gadget gaps {:.2e} {:.2e}, uniform-opponent gaps {:.2e} {:.2e}",
                with[0], with[1], without[0], without[1]
            ));
            assert!(
                with[0] < 2e-3 && with[1] < 2e-3,
                "{name}, player {player}: the re-solve misses the full solve's values by {with:?}"
            );
            // The control: without the gadget the opponent's values move far more where its
            // range is shaped (player 0, after its flop bet).
            assert!(
                name != "flop bet" || player == 0 || without[0] > 5.0 * with[0].max(1e-3),
                "{name}, player {player}: the control {without:?} against {with:?}"
            );
        }
    }
    eprintln!(
        "full solve 1000 CFR+ iterations: {t_full:.2} s; 12 re-solves of 400 iterations: {:.2} s\n{}",
        t0.elapsed().as_secs_f64(),
        report.join("\n")
    );
}

/// The whole-hand policy of continual re-solving: for each player, a chain of searches along
/// every public path of `full`'s layout (the chain is cloned at every branch), its rows
/// written into `[decision][action][hand]` arrays of that layout. Returns the arrays and the
/// number of searches run.
fn chain_policy(
    full: &FullSolve,
    config: HoldemSearchConfig,
    oracle: &mut Oracle,
) -> ([Vec<f64>; 2], usize) {
    let l = &*full.layout;
    let np = l.num_hands();
    let mut out = [full.avg[0].clone(), full.avg[1].clone()];
    let template = full.game.initial_state();
    let mut searches = 0;
    for (p, out) in out.iter_mut().enumerate() {
        out.fill(f64::NAN);
        let mut stack = vec![(0usize, HoldemResolver::new(p, config).unwrap())];
        while let Some((n, mut chain)) = stack.pop() {
            if l.nodes[n].kind == PokerKind::Decision(p) {
                let state = state_at(&template, &l.path(n)).unwrap();
                let dec = chain.act(&state, oracle).unwrap();
                searches += usize::from(dec.searched);
                let d = l.nodes[n].decision as usize;
                let o = l.offsets[p][d];
                assert_eq!(dec.actions, l.nodes[n].actions);
                for x in 0..np {
                    for (a, q) in dec.rows[x].iter().enumerate() {
                        out[o + a * np + x] = *q;
                    }
                }
            }
            for c in l.children(n) {
                stack.push((c, chain.clone()));
            }
        }
        assert!(out.iter().all(|q| q.is_finite()), "player {p}: rows missed");
    }
    (out, searches)
}

fn to_tree_policy(
    rows: &[Row],
    layout: &PokerLayout,
    f: &[Vec<f64>; 2],
    tree: &PublicTree,
) -> TreePolicy {
    let np = layout.num_hands();
    let mut pol = uniform_tree_policy(tree);
    for r in rows {
        let inf = &tree.infosets[r.player];
        for (k, g) in inf.range(r.infoset).enumerate() {
            pol[r.player][g] = f[r.player][r.entry + k * np];
        }
    }
    pol
}

#[test]
fn continual_resolving_with_an_exact_oracle_is_hardly_exploitable() {
    let t0 = Instant::now();
    let full = FullSolve::new(1000);
    let t_full = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let tree = PublicTree::build_with_options(
        &full.game,
        TreeOptions {
            merge_chance: true,
            ..TreeOptions::default()
        },
    )
    .unwrap();
    let rows = map_rows(&full.game, &full.layout, &tree);
    let t_tree = t0.elapsed().as_secs_f64();
    let config = HoldemSearchConfig {
        iterations: 200,
        ..HoldemSearchConfig::default()
    };
    let mut oracle = Oracle {
        full: &full,
        leaf_trees: 0,
        root_queries: 0,
    };
    let t0 = Instant::now();
    let (chain, searches) = chain_policy(&full, config, &mut oracle);
    let t_chain = t0.elapsed().as_secs_f64();
    let (leaf_trees, root_queries) = (oracle.leaf_trees, oracle.root_queries);
    let nc = |f: &[Vec<f64>; 2]| {
        nash_conv(&tree, &to_tree_policy(&rows, &full.layout, f, &tree)).nash_conv
    };
    let (nc_chain, nc_full) = (nc(&chain), nc(&full.avg));
    let nc_uniform = nash_conv(&tree, &uniform_tree_policy(&tree)).nash_conv;
    eprintln!(
        "full solve {t_full:.2} s, tree and rows {t_tree:.1} s; {searches} searches of {} iterations \
         in {t_chain:.2} s ({:.2} ms each; {leaf_trees} with leaves, {root_queries} new-round \
         root queries); NashConv: continual re-solving {nc_chain:.5}, full solve {nc_full:.5}, \
         uniform {nc_uniform:.4}",
        config.iterations,
        1e3 * t_chain / searches as f64
    );
    assert!(searches > 200 && leaf_trees > 0 && root_queries > 0);
    assert!(
        nc_chain < 0.01 && nc_chain < 0.01 * nc_uniform,
        "continual re-solving {nc_chain} against uniform {nc_uniform}"
    );
}

/// An untrained CVPN (hidden 16, one layer) for `game` with `hands` private states, saved at
/// `dir`.
fn save_untrained_cvpn(
    game: &UniversalPokerGame,
    hands: usize,
    dir: &std::path::Path,
) -> std::path::PathBuf {
    use armac::game::Game;
    use armac::nn::cvpn::{Cvpn, CvpnConfig};
    let cfg = CvpnConfig {
        game: game.load_string(),
        input_size: game.public_state_tensor_size() + 2 * hands,
        private_states: hands,
        num_actions: game.num_distinct_actions(),
        hidden: 16,
        layers: 1,
    };
    let device = burn::tensor::Device::flex();
    Cvpn::new(cfg, &device, 1e-3, 3).unwrap().save(dir).unwrap();
    dir.to_path_buf()
}

#[test]
fn holdem_search_cache_keeps_to_its_byte_budget_and_changes_no_answer() {
    use armac::game::Turn;
    use armac::policy::Policy;
    use armac::rl::sog::holdem_policy::DEFAULT_CACHE_BYTES;
    use armac::run::sog::holdem::load_holdem_search_policy;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("holdem_search_cache");
    let _ = std::fs::remove_dir_all(&dir);
    let tiny = UniversalPokerGame::from_string(TINY).unwrap();
    let net = save_untrained_cvpn(&tiny, 45, &dir.join("tiny"));
    let config = HoldemSearchConfig {
        iterations: 20,
        ..HoldemSearchConfig::default()
    };
    // Decisions along eight hands, actions and cards drawn by a fixed LCG.
    let mut seed = 12345u64;
    let mut draw = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n as u64) as usize
    };
    let mut decisions = Vec::new();
    for _ in 0..8 {
        let mut s = tiny.initial_state();
        while !s.is_terminal() {
            match s.turn() {
                Turn::Chance => {
                    let o = s.chance_outcomes();
                    let a = o[draw(o.len())].0;
                    s.apply(a);
                }
                _ => {
                    decisions.push(s.clone());
                    let l = s.legal_actions();
                    s.apply(l[draw(l.len())]);
                }
            }
        }
    }
    assert!(decisions.len() >= 16, "{} decisions", decisions.len());
    let policy = |bytes: usize| {
        load_holdem_search_policy(&net, &tiny, config)
            .unwrap()
            .with_cache_bytes(bytes)
    };
    let full = policy(DEFAULT_CACHE_BYTES);
    let answers: Vec<Vec<f64>> = decisions
        .iter()
        .map(|s| full.action_probabilities(s).unwrap())
        .collect();
    let held = full.cache_bytes();
    assert!(held > 0 && held <= DEFAULT_CACHE_BYTES, "{held}");
    // Each cached search holds at least its tree's nodes.
    let tree = PokerLayout::from_state(&tiny.initial_state(), 100_000).unwrap();
    assert!(tree.heap_bytes() >= tree.nodes.len() * std::mem::size_of_val(&tree.nodes[0]));
    for budget in [0, held / 4] {
        let small = policy(budget);
        for (s, want) in decisions.iter().zip(&answers) {
            assert_eq!(
                &small.action_probabilities(s).unwrap(),
                want,
                "budget {budget}"
            );
            assert!(
                small.cache_bytes() <= budget,
                "{} > {budget}",
                small.cache_bytes()
            );
        }
        assert!(small.searches() > full.searches(), "budget {budget}");
    }
    // Searches of several threads run side by side and give the same answers, with the
    // cache shared (budget: all of them) and without it (every query searches).
    for budget in [DEFAULT_CACHE_BYTES, 0] {
        let shared = policy(budget);
        std::thread::scope(|scope| {
            for t in 0..3 {
                let (shared, decisions, answers) = (&shared, &decisions, &answers);
                scope.spawn(move || {
                    for (s, want) in decisions.iter().zip(answers).skip(t) {
                        assert_eq!(&shared.action_probabilities(s).unwrap(), want, "{budget}");
                    }
                });
            }
        });
    }
}

#[test]
fn holdem_search_policy_plays_a_match_and_names_bad_checkpoints() {
    use armac::eval::matchup::sampled_match;
    use armac::policy::{Policy, UniformPolicy};
    use armac::run::sog::holdem::load_holdem_search_policy;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("holdem_search");
    let _ = std::fs::remove_dir_all(&dir);
    let save = |game: &UniversalPokerGame, hands: usize, name: &str| {
        save_untrained_cvpn(game, hands, &dir.join(name))
    };
    let tiny = UniversalPokerGame::from_string(TINY).unwrap();
    let fcpa = UniversalPokerGame::hunl_fcpa();
    let good = save(&tiny, 45, "tiny");
    // Also written for `armac-eval match --a sog:DIR --game hunl_fcpa` by hand.
    let other = save(&fcpa, 1326, "fcpa");
    let wrong_size = save(&tiny, 44, "tiny44");
    let config = HoldemSearchConfig {
        iterations: 50,
        ..HoldemSearchConfig::default()
    };
    let policy = load_holdem_search_policy(&good, &tiny, config).unwrap();
    let t0 = Instant::now();
    let r = sampled_match(&tiny, &policy, &UniformPolicy, 10, 5).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(r.hands, 20);
    assert!(r.mean.is_finite(), "{r:?}");
    let searches = policy.searches();
    assert!(searches > 0);
    // At the hand's start player 1 acts: a distribution over its legal actions.
    let mut s = tiny.initial_state();
    for o in 0..4 {
        s.apply(o);
    }
    let probs = policy.action_probabilities(&s).unwrap();
    assert_eq!(probs.len(), s.legal_actions().len());
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    eprintln!(
        "untrained tiny CVPN, 50 iterations: 20 hands vs uniform in {secs:.2} s, {searches} searches ({:.1} ms each); mean {:.2} chips",
        1e3 * secs / searches as f64,
        r.mean
    );
    // Bad checkpoints are refused with the culprit named.
    let err = |d: &std::path::Path| {
        format!(
            "{:#}",
            anyhow::Error::from(load_holdem_search_policy(d, &tiny, config).err().unwrap())
        )
    };
    let e = err(&dir.join("missing"));
    assert!(e.contains("no such directory"), "{e}");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let e = err(&dir.join("empty"));
    assert!(e.contains("not a CVPN checkpoint"), "{e}");
    let e = err(&other);
    assert!(
        e.contains("trained on universal_poker") && e.contains("numRanks=13"),
        "{e}"
    );
    let e = err(&wrong_size);
    assert!(e.contains("incompatible CVPN") && e.contains("44"), "{e}");
}

/// An untrained CVPN for FCPA (`hidden` wide, `layers` deep, initialised from `seed`).
fn untrained_fcpa_cvpn(hidden: usize, layers: usize, seed: u64) -> armac::nn::cvpn::Cvpn {
    use armac::game::Game;
    use armac::nn::cvpn::{Cvpn, CvpnConfig};
    let game = UniversalPokerGame::hunl_fcpa();
    let cfg = CvpnConfig {
        game: game.load_string(),
        input_size: game.public_state_tensor_size() + 2 * 1326,
        private_states: 1326,
        num_actions: game.num_distinct_actions(),
        hidden,
        layers,
    };
    Cvpn::new(cfg, &burn::tensor::Device::flex(), 1e-3, seed).unwrap()
}

#[test]
fn fcpa_chain_searches_every_street_with_a_cvpn() {
    use armac::rl::sog::holdem_policy::CvpnHoldemLeaves;
    let game = UniversalPokerGame::hunl_fcpa();
    let net = untrained_fcpa_cvpn(64, 2, 1);
    let config = HoldemSearchConfig {
        iterations: 20,
        ..HoldemSearchConfig::default()
    };
    let mut leaves = CvpnHoldemLeaves::new(Arc::new(net.snapshot()), config.runout_boards);
    let mut chains = [
        HoldemResolver::new(0, config).unwrap(),
        HoldemResolver::new(1, config).unwrap(),
    ];
    // Hole cards, then: call, check | flop | check, check | turn | check, check | river |
    // check.
    let cfgp = game.config();
    let card = |name: &str| {
        cfgp.outcome_of(armac::games::cards::parse_card(name).unwrap())
            .unwrap()
    };
    let mut s = game.initial_state();
    for c in ["As", "Ks", "7c", "2d"] {
        s.apply(card(c));
    }
    let script: &[&str] = &[
        "1", "1", "Th", "4c", "9d", "1", "1", "Qh", "1", "1", "3s", "1",
    ];
    let mut report = Vec::new();
    for m in script.iter().copied().chain(std::iter::once("end")) {
        if let armac::game::Turn::Player(p) = s.turn() {
            let t0 = Instant::now();
            let d = chains[p].act(&s, &mut leaves).unwrap();
            let ms = 1e3 * t0.elapsed().as_secs_f64();
            assert!(d.searched);
            for row in &d.rows {
                assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            }
            report.push(format!(
                "board {} p{p}: {} nodes, {} leaves, gadget {}: {ms:.0} ms",
                s.board_cards().len(),
                d.nodes,
                d.leaves,
                d.gadget
            ));
        }
        if m == "end" {
            break;
        }
        let a = match armac::games::cards::parse_card(m) {
            Some(_) => card(m),
            None => m.parse().unwrap(),
        };
        s.apply(a);
    }
    assert_eq!(report.len(), 8, "{report:?}");
    eprintln!(
        "FCPA, 20 CFR+ iterations, untrained CVPN (2 x 64):\n{}",
        report.join("\n")
    );
}

#[test]
fn holdem_resolver_refuses_bad_settings_and_states_naming_them() {
    let full = FullSolve::new(1);
    let mut oracle = Oracle {
        full: &full,
        leaf_trees: 0,
        root_queries: 0,
    };
    let bad = HoldemSearchConfig {
        iterations: 0,
        ..HoldemSearchConfig::default()
    };
    let e = HoldemResolver::new(0, bad).unwrap_err().to_string();
    assert!(e.contains("`iterations` = 0"), "{e}");
    let bad = HoldemSearchConfig {
        alpha: 1.5,
        ..HoldemSearchConfig::default()
    };
    let e = HoldemResolver::new(0, bad).unwrap_err().to_string();
    assert!(e.contains("`alpha` = 1.5"), "{e}");
    let e = HoldemResolver::new(2, HoldemSearchConfig::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`player` = 2"), "{e}");
    let config = HoldemSearchConfig {
        iterations: 5,
        ..HoldemSearchConfig::default()
    };
    let start = state_at(&full.game.initial_state(), &[]).unwrap();
    // Player 1 acts first: player 0's chain is asked at the wrong turn.
    let e = HoldemResolver::new(0, config)
        .unwrap()
        .act(&start, &mut oracle)
        .unwrap_err()
        .to_string();
    assert!(e.contains("player 0 is asked to act"), "{e}");
    // A chain cannot start after the first round.
    let flop = [
        PokerEdge::Action(1),
        PokerEdge::Action(1),
        PokerEdge::Deal(vec![0, 4, 8]),
    ];
    let at_flop = state_at(&start, &flop).unwrap();
    let e = HoldemResolver::new(0, config)
        .unwrap()
        .act(&at_flop, &mut oracle)
        .unwrap_err()
        .to_string();
    assert!(e.contains("first betting round"), "{e}");
    // Inside a board deal.
    let mut mid = state_at(&start, &flop[..2]).unwrap();
    mid.apply(full.game.config().outcome_of(8).unwrap());
    let e = public_edges(&mid).unwrap_err().to_string();
    assert!(e.contains("inside a board deal"), "{e}");
    // A chain asked at a state off its previous search: player 1's chain searched at the
    // hand's start and after the flop 0 4 8 and player 0's check; a state on the flop 0 4 9
    // does not continue that search.
    let mut chain = HoldemResolver::new(1, config).unwrap();
    assert_eq!(chain.player(), 1);
    chain.act(&start, &mut oracle).unwrap();
    let mut line = flop.to_vec();
    line.push(PokerEdge::Action(1));
    let d = chain
        .act(&state_at(&start, &line).unwrap(), &mut oracle)
        .unwrap();
    assert!(d.searched && d.gadget);
    line[2] = PokerEdge::Deal(vec![0, 4, 9]);
    let e = chain
        .act(&state_at(&start, &line).unwrap(), &mut oracle)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("does not continue the previous search's root"),
        "{e}"
    );
}

/// Facing a pre-flop all-in on FCPA, calling leads to a run-out: the search values it from the
/// cards, so even an untrained CVPN calls with aces and folds seven-deuce (needing about half
/// the pot, aces have at least 80% equity against any hand and seven-deuce wins well under
/// half against any range but the weakest).
#[test]
fn fcpa_all_in_calls_are_valued_from_the_cards() {
    use armac::eval::lbr::RangePolicy;
    use armac::games::cards::{hole_index, parse_card};
    use armac::rl::sog::holdem_policy::HoldemSearchPolicy;
    let game = UniversalPokerGame::hunl_fcpa();
    let net = untrained_fcpa_cvpn(32, 1, 3);
    let config = HoldemSearchConfig {
        iterations: 50,
        ..HoldemSearchConfig::default()
    };
    assert!(
        config.runout_boards > 0,
        "run-outs are valued from the cards by default"
    );
    let policy = HoldemSearchPolicy::new(
        UniversalPokerGame::hunl_fcpa(),
        Arc::new(net.snapshot()),
        config,
        "untrained".into(),
    )
    .unwrap();
    let card = |name: &str| parse_card(name).unwrap();
    let mut s = game.initial_state();
    // Player 0 (big blind) holds 5c 4c, player 1 (small blind) 9d 8d; the small blind shoves.
    for c in ["5c", "4c", "9d", "8d"] {
        s.apply(game.config().outcome_of(card(c)).unwrap());
    }
    s.apply(3);
    let aces = hole_index(card("Ah"), card("As")) as u16;
    let seven_deuce = hole_index(card("7h"), card("2s")) as u16;
    let rows = policy
        .hand_action_probabilities(&s, &[aces, seven_deuce])
        .unwrap();
    assert!(rows[0][1] > 0.9, "aces call an all-in: {:?}", rows[0]);
    assert!(
        rows[1][0] > 0.9,
        "seven-deuce folds to an all-in: {:?}",
        rows[1]
    );
}

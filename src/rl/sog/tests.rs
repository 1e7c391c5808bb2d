use super::*;
use crate::games::load_game;
use crate::search::{GtCfrConfig, SubgameOracle};

fn compile(name: &str) -> (Arc<PublicTree>, Arc<HistoryTree>) {
    let game = load_game(name).unwrap();
    let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
    let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
    (tree, ht)
}

fn config(s: usize, epsilon: f64) -> SelfPlayConfig {
    SelfPlayConfig {
        resolver: ResolverConfig {
            search: GtCfrConfig {
                simulations: s,
                ..GtCfrConfig::default()
            },
            ..ResolverConfig::default()
        },
        epsilon,
        queries_per_search: 4,
    }
}

/// Self-play games on Leduc with exact leaves: every decision searches or is counted as
/// unsearched, queries are capped per search and lie at non-terminal nodes with some mass,
/// policy targets are distributions, and the same seed replays the same game.
#[test]
fn self_play_games_record_queries_and_targets() {
    let (tree, ht) = compile("leduc_poker");
    let mut oracle = SubgameOracle::new(tree.clone(), ht.clone(), 50).unwrap();
    let cfg = config(10, 0.1);
    let mut totals = GameRecord::default();
    for seed in 0..6 {
        let g = play_game(&tree, &ht, &cfg, seed, &mut oracle).unwrap();
        assert!(g.decisions >= 2, "a Leduc game has at least two decisions");
        assert_eq!(g.searches + g.unsearched, g.decisions);
        assert_eq!(g.policy_targets.len(), g.searches);
        assert!(g.queries.len() <= 4 * g.searches);
        for q in &g.queries {
            assert_ne!(
                tree.nodes[q.node as usize].kind,
                crate::tree::NodeKind::Terminal
            );
            assert!(q.ranges.iter().any(|r| r.iter().any(|&x| x > 0.0)));
        }
        for t in &g.policy_targets {
            assert!(t.rows.iter().any(|(a, _)| !a.is_empty()));
            for (a, probs) in &t.rows {
                assert_eq!(a.len(), probs.len());
                if !a.is_empty() {
                    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-9);
                }
            }
        }
        let again = play_game(&tree, &ht, &cfg, seed, &mut oracle).unwrap();
        assert_eq!(again, g, "seed {seed} replays");
        totals.searches += g.searches;
        totals.searches_with_frontier += g.searches_with_frontier;
        totals.queries.extend(g.queries);
    }
    assert!(totals.searches_with_frontier > 0 && !totals.queries.is_empty());
}

struct Counting<'a> {
    inner: &'a mut dyn LeafValues,
    calls: u64,
}

impl LeafValues for Counting<'_> {
    fn evaluate(&mut self, q: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        self.calls += 1;
        self.inner.evaluate(q)
    }
}

/// A lock-step group of games plays exactly the games played one by one (the exact leaves
/// answer each query on its own), with one evaluator call per single update for the whole
/// group (far fewer calls than alone) and search layouts shared between the chains.
#[test]
fn lockstep_game_groups_equal_games_played_alone() {
    let (tree, ht) = compile("leduc_poker");
    let mut oracle = SubgameOracle::new(tree.clone(), ht.clone(), 50).unwrap();
    let cfg = config(6, 0.1);
    let seeds = [3u64, 4, 5, 6, 7, 8];
    let mut alone = Vec::new();
    let mut alone_calls = 0;
    for &seed in &seeds {
        let mut c = Counting {
            inner: &mut oracle,
            calls: 0,
        };
        alone.push(play_game(&tree, &ht, &cfg, seed, &mut c).unwrap());
        alone_calls += c.calls;
    }
    let layouts = Arc::new(LayoutCache::new(1024));
    let mut c = Counting {
        inner: &mut oracle,
        calls: 0,
    };
    let group = play_games(&tree, &ht, &cfg, &seeds, &layouts, &mut c).unwrap();
    assert_eq!(group, alone);
    let searches: usize = alone.iter().map(|g| g.searches).sum();
    assert!(searches > seeds.len());
    assert!(
        2 * c.calls <= alone_calls,
        "group {} calls, alone {alone_calls}",
        c.calls
    );
    assert!(
        (layouts.builds() as usize) < searches,
        "{} layouts built for {searches} searches",
        layouts.builds()
    );
}

/// TD(1) examples: the game's outcome at both players' actual private states (player 1
/// negated), normalised by the game's scale, weighted by `td1`, everything else masked;
/// weight 0 gives none. The actor's actual private state holds the decided infoset.
#[test]
fn td1_examples_carry_the_outcome_at_the_actual_private_states() {
    let (tree, ht) = compile("kuhn_poker");
    let game = load_game("kuhn_poker").unwrap();
    let mut enc = PbsEncoder::new(game, tree.clone(), ht.clone()).unwrap();
    let mut oracle = SubgameOracle::new(tree.clone(), ht.clone(), 50).unwrap();
    let (p, scale) = (enc.private_states(), enc.scale());
    let mut checked = 0;
    for seed in 0..8 {
        let g = play_game(&tree, &ht, &config(5, 0.1), seed, &mut oracle).unwrap();
        assert!(g.return0 != 0.0, "Kuhn has no draws");
        for t in &g.policy_targets {
            assert_ne!(t.private[0], t.private[1], "Kuhn deals two different cards");
            assert!(
                !t.rows[t.private[t.player]].0.is_empty(),
                "the actor's actual private state has a row at the decision"
            );
            assert!(td1_example(&mut enc, t, g.return0, 0.0).unwrap().is_none());
            let e = td1_example(&mut enc, t, g.return0, 0.25)
                .unwrap()
                .expect("some actual state has opponent mass");
            assert!(e.policy.is_empty() && e.policy_mask.is_empty());
            for i in 0..2 {
                for x in 0..p {
                    let (v, m) = (e.values[i * p + x], e.value_mask[i * p + x]);
                    if x == t.private[i] && m > 0.0 {
                        let want = if i == 0 { g.return0 } else { -g.return0 } / scale;
                        assert!((f64::from(v) - want).abs() < 1e-6, "{v} vs {want}");
                        assert_eq!(m, 0.25);
                        checked += 1;
                    } else {
                        assert_eq!((v, m), (0.0, 0.0), "player {i} state {x} masked");
                    }
                }
            }
        }
    }
    assert!(checked >= 8);
}

#[test]
fn buffers_round_trip_and_refuse_truncation() {
    let mut q = QueryBuffer::new(2);
    for n in 0..3 {
        q.push(Pbs {
            node: n,
            ranges: [vec![0.5, n as f64], vec![1.0]],
        });
    }
    assert_eq!(q.dropped, 1);
    assert_eq!(q.items.front().unwrap().node, 1);
    let mut r = ExampleReplay::new(4);
    r.push(Example {
        input: vec![1.0, 2.0],
        values: vec![0.1; 4],
        value_mask: vec![1.0; 4],
        policy: Vec::new(),
        policy_mask: Vec::new(),
    });
    r.push(Example {
        input: vec![3.0, 4.0],
        values: vec![0.0; 4],
        value_mask: vec![0.0; 4],
        policy: vec![0.5; 6],
        policy_mask: vec![1.0, 0.0],
    });
    let bytes = encode_buffers(&q, &r);
    assert_eq!(decode_buffers(&bytes).unwrap(), (q.clone(), r.clone()));
    assert!(decode_buffers(&bytes[..bytes.len() - 3]).is_err());
    let b = r.sample(&mut SplitMix64::new(1), 5, 2, 3);
    assert_eq!(b.input.len(), 10);
    assert_eq!((b.policy.len(), b.policy_mask.len()), (30, 10));
    assert_eq!(q.clone().take(5).len(), 2);
}

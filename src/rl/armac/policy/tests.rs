use super::*;
use crate::eval::lbr::{PerHand, RangePolicy};
use crate::game::{Action, State as _, Turn};
use crate::games::cards::{CardSet, HOLE_MASKS, NUM_HOLE_HANDS, parse_cards};
use crate::games::load_game;
use crate::games::universal_poker::UniversalPokerGame;
use crate::nn::armac::ArmacNetConfig;

/// A recurrent checkpoint's batched range query (the network run along every hand's
/// history at once) agrees with querying the policy state by state, and the answer depends
/// on the history, not only on the current observation.
#[test]
fn recurrent_range_queries_match_per_state_queries() {
    let game = load_game("hunl_fcpa").unwrap();
    let cfg = ArmacNetConfig::new(game.observation_tensor_size(), game.num_distinct_actions())
        .with_encoder_hidden(16)
        .with_head_hidden(16)
        .with_recurrent(true);
    let policy = ArmacAveragePolicy::new(ArmacPolicyNet::init(cfg, 11).unwrap(), game.clone(), 0);
    let mut s = dealt_fcpa();
    s.apply(1); // the small blind calls; the big blind acts at its second decision step
    assert_eq!(s.turn(), Turn::Player(0));
    let dead = CardSet::from_cards(&parse_cards("2c3d").unwrap());
    let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
        .filter(|&h| HOLE_MASKS[h as usize] & dead.0 == 0)
        .take(40)
        .collect();
    let batched = policy.hand_action_probabilities(&s, &hands).unwrap();
    let single = PerHand(ArmacAveragePolicy::new(policy.net.clone(), game.clone(), 0))
        .hand_action_probabilities(&s, &hands)
        .unwrap();
    for (x, y) in batched.iter().zip(&single) {
        assert!(
            x.iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-5),
            "{x:?} vs {y:?}"
        );
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-6);
    }
    // Same acting player and own cards, different history: the preceding decision's
    // observations change the answer.
    let path = decision_path(game.as_ref(), s.history()).unwrap();
    assert_eq!(path.len(), 2);
    let direct = policy.recurrent_outputs(&[s.history()]).unwrap();
    let inputs = seq_inputs(&[&path[1..]], 1, policy.net.config().input_size, 4);
    let (fresh, _) = policy.net.evaluate_sequences(&inputs, 1).unwrap();
    assert!(
        direct
            .avg_policy
            .iter()
            .zip(&fresh.avg_policy)
            .any(|(a, b)| (a - b).abs() > 1e-6),
        "{:?} vs {:?}",
        direct.avg_policy,
        fresh.avg_policy
    );
}

/// Hold'em FCPA after the deal of AsKd (player 0) and 2c3d (player 1).
fn dealt_fcpa() -> crate::games::universal_poker::UniversalPokerState {
    let mut s = UniversalPokerGame::hunl_fcpa().initial_state();
    for c in parse_cards("AsKd2c3d").unwrap() {
        s.apply(c as Action);
    }
    s
}

/// The player to act at `s` and every `step`-th of its hands that avoid the opponent's
/// cards.
fn live_hands(
    s: &crate::games::universal_poker::UniversalPokerState,
    step: usize,
) -> (usize, Vec<u16>) {
    let Turn::Player(p) = s.turn() else {
        panic!("not a decision")
    };
    let dead = CardSet::from_cards(s.hole_cards(1 - p)).0;
    let hands = (0..NUM_HOLE_HANDS as u16)
        .filter(|&h| HOLE_MASKS[h as usize] & dead == 0)
        .step_by(step)
        .collect();
    (p, hands)
}

/// A small Hold'em FCPA network, recurrent or feed-forward.
fn small_net(recurrent: bool, seed: u64) -> (GameRef, ArmacPolicyNet) {
    let game = load_game("hunl_fcpa").unwrap();
    let input = if recurrent {
        game.observation_tensor_size()
    } else {
        game.information_state_tensor_size()
    };
    let cfg = ArmacNetConfig::new(input, game.num_distinct_actions())
        .with_encoder_hidden(16)
        .with_head_hidden(16)
        .with_recurrent(recurrent);
    (game, ArmacPolicyNet::init(cfg, seed).unwrap())
}

/// Asks `fast` and `slow` for a sample of the hands at `s` and requires the same answers
/// to 1e-5, answers that depend on the hand, and a refused colliding hand.
fn same_ranges(
    fast: &ArmacAveragePolicy,
    slow: &ArmacAveragePolicy,
    s: &crate::games::universal_poker::UniversalPokerState,
) {
    let Turn::Player(p) = s.turn() else {
        panic!("not a decision")
    };
    let mut dead = CardSet::from_cards(s.board_cards()).0;
    dead |= CardSet::from_cards(s.hole_cards(1 - p)).0;
    let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
        .filter(|&h| HOLE_MASKS[h as usize] & dead == 0)
        .step_by(37)
        .collect();
    let a = fast.hand_action_probabilities(s, &hands).unwrap();
    let b = slow.hand_action_probabilities(s, &hands).unwrap();
    assert_eq!(a.len(), hands.len());
    let mut spread = 0.0f64;
    for (x, y) in a.iter().zip(&b) {
        for (u, v) in x.iter().zip(y) {
            assert!((u - v).abs() < 1e-5, "{x:?} vs {y:?} at {:?}", s.history());
        }
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{x:?}");
        spread = spread.max((x[1] - a[0][1]).abs());
    }
    assert!(spread > 0.0, "the answer should depend on the hand");
    // Colliding hands are refused, naming the hand.
    let bad = HOLE_MASKS.iter().position(|m| m & dead != 0).unwrap() as u16;
    let err = fast.hand_action_probabilities(s, &[bad]).unwrap_err();
    assert!(err.to_string().contains(&format!("hand {bad}")), "{err}");
}

/// Walks two deals through pre-flop, a branch, the flop and back, asking both paths at
/// every stop (so the fast path hits kept states and kept probabilities, and the second
/// deal shares the pre-flop keys of the first).
fn walk_two_deals(fast: &ArmacAveragePolicy, slow: &ArmacAveragePolicy) {
    for deal in ["AsKd2c3d", "7h7c9s2d"] {
        let mut s = UniversalPokerGame::hunl_fcpa().initial_state();
        for c in parse_cards(deal).unwrap() {
            s.apply(c as Action);
        }
        same_ranges(fast, slow, &s);
        same_ranges(fast, slow, &s); // a repeated query
        let mut branch = s.clone();
        branch.apply(2); // pot bet
        same_ranges(fast, slow, &branch);
        s.apply(1); // call
        same_ranges(fast, slow, &s);
        s.apply(1); // check: the flop is dealt
        for c in parse_cards("Qh8d4s").unwrap() {
            s.apply(c as Action);
        }
        same_ranges(fast, slow, &s);
        s.apply(2);
        same_ranges(fast, slow, &s);
        same_ranges(fast, slow, &branch); // back to the branch after walking the hand
    }
}

/// The fast range path (every public state once for all hands, states and probabilities
/// kept across hands) gives the replay-every-hand path's answers to 1e-5, for recurrent
/// and feed-forward nets, with the default cache and with no kept states at all, on the
/// plain kernels and on burn's; and the second deal reuses the first one's pre-flop work.
#[test]
fn fast_range_queries_match_replayed_ones() {
    for recurrent in [true, false] {
        let (game, net) = small_net(recurrent, 5);
        let fast = ArmacAveragePolicy::new(net.clone(), game.clone(), 0);
        let cold = ArmacAveragePolicy::new(net.clone(), game.clone(), 0).with_range_cache_bytes(0);
        let burn = ArmacAveragePolicy::new(net.clone(), game.clone(), 0).with_plain_kernels(false);
        let slow = ArmacAveragePolicy::new(net, game, 0).with_incremental_ranges(false);
        walk_two_deals(&fast, &slow);
        walk_two_deals(&cold, &slow);
        walk_two_deals(&burn, &slow);
        let st = fast.range_stats();
        assert_eq!(st.queries, 14, "{st:?}");
        // Repeated queries and the second deal's pre-flop root are answered from the kept
        // probabilities.
        assert!(st.prob_hits >= 6, "{st:?}");
        assert_eq!(st.head_passes, st.queries - st.prob_hits, "{st:?}");
        if recurrent {
            assert!(st.reused_steps > 0, "{st:?}");
            assert!(st.encoder_steps > 0, "{st:?}");
            // Post-flop steps drop the hands that hold a board card.
            assert!(
                st.encoder_rows < st.encoder_steps * NUM_HOLE_HANDS as u64,
                "{st:?}"
            );
            assert_eq!(cold.range_stats().reused_steps, 0);
        } else {
            assert_eq!(st.encoder_steps + st.reused_steps, 0, "{st:?}");
        }
        fast.reset_range_cache();
        assert_eq!(fast.range_stats(), RangeStats::default());
    }
}

/// `current:` range queries (LBR of pi^t) on a feed-forward net: the fast path equals the
/// replay path and burn's forward pass (without the plain kernels), each hand's answer is
/// the per-state current policy of that hand, and it is not the average policy's; a
/// recurrent net refuses them, naming `current:`.
#[test]
fn current_policy_range_queries_are_the_mean_regret_policy() {
    // A random net whose mean-regret head is not negative everywhere at the first
    // decision (where it is, pi^t is uniform for every hand).
    let spread = |net: &ArmacPolicyNet, game: &GameRef| {
        let p = ArmacAveragePolicy::new(net.clone(), game.clone(), 0).with_current_policy(true);
        let s = dealt_fcpa();
        let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16).step_by(37).skip(1).collect();
        let r = p.hand_action_probabilities(&s, &hands).unwrap();
        r.iter().map(|x| (x[1] - r[0][1]).abs()).fold(0.0, f64::max)
    };
    let (game, net) = (1..=16)
        .map(|seed| small_net(false, seed))
        .find(|(g, n)| spread(n, g) > 1e-3)
        .expect("a seed with a hand-dependent pi^t");
    let fast = ArmacAveragePolicy::new(net.clone(), game.clone(), 0).with_current_policy(true);
    let slow = ArmacAveragePolicy::new(net.clone(), game.clone(), 0)
        .with_current_policy(true)
        .with_incremental_ranges(false);
    let burn = ArmacAveragePolicy::new(net.clone(), game.clone(), 0)
        .with_current_policy(true)
        .with_plain_kernels(false);
    let avg = ArmacAveragePolicy::new(net, game, 0);
    walk_two_deals(&fast, &slow);
    walk_two_deals(&fast, &burn);
    let mut s = dealt_fcpa();
    s.apply(1);
    let (p, hands) = live_hands(&s, 97);
    let ranges = fast.hand_action_probabilities(&s, &hands).unwrap();
    let avg_ranges = avg.hand_action_probabilities(&s, &hands).unwrap();
    let mut gap = 0.0f64;
    for ((&h, r), a) in hands.iter().zip(&ranges).zip(&avg_ranges) {
        let with = crate::eval::lbr::with_hole_cards(&s, p, h as usize).unwrap();
        let per_state = crate::policy::Policy::action_probabilities(&fast, &with).unwrap();
        let legal = with.legal_actions();
        for (&action, &x) in legal.iter().zip(&per_state) {
            assert!(
                (r[action] - x).abs() < 1e-5,
                "hand {h}: {r:?} vs {per_state:?}"
            );
        }
        gap = gap.max(
            r.iter()
                .zip(a)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max),
        );
    }
    assert!(gap > 1e-3, "current and average ranges coincide");
    let (game, net) = small_net(true, 7);
    let rec = ArmacAveragePolicy::new(net, game, 0).with_current_policy(true);
    let s = dealt_fcpa();
    let err = rec.hand_action_probabilities(&s, &hands).unwrap_err();
    assert!(err.to_string().contains("current:"), "{err}");
}

/// Threads that ask for the same public state at once compute it once: the others wait
/// for the first and read its answer (one head pass, however the threads interleave).
#[test]
fn concurrent_queries_of_one_state_compute_it_once() {
    for recurrent in [true, false] {
        let (game, net) = small_net(recurrent, 3);
        let policy = ArmacAveragePolicy::new(net, game, 0);
        let s = dealt_fcpa();
        // More than FEW_HANDS hands: a whole-range query.
        let (_, hands) = live_hands(&s, 61);
        assert!(hands.len() > FEW_HANDS);
        let barrier = std::sync::Barrier::new(4);
        let answers: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        policy.hand_action_probabilities(&s, &hands).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(answers.iter().all(|a| a == &answers[0]));
        let st = policy.range_stats();
        assert_eq!((st.queries, st.head_passes), (4, 1), "{st:?}");
        assert_eq!(st.prob_hits, 3, "{st:?}");
    }
}

/// Queries for a few hands (LBR's opponent acting on its actual hand) give the
/// replay-every-hand path's answers without a pass over the whole range, from the root
/// and from a kept prefix, and a later whole-range query at the same state still computes
/// and keeps it.
#[test]
fn few_hand_queries_match_replayed_ones_without_whole_range_passes() {
    for recurrent in [true, false] {
        let (game, net) = small_net(recurrent, 4);
        let fast = ArmacAveragePolicy::new(net.clone(), game.clone(), 0);
        let slow = ArmacAveragePolicy::new(net, game, 0).with_incremental_ranges(false);
        // Asks for a few hands at `s`; returns how many.
        let few = |s: &crate::games::universal_poker::UniversalPokerState| {
            let (_, hands) = live_hands(s, 1);
            let board = CardSet::from_cards(s.board_cards()).0;
            let picked: Vec<u16> = hands
                .iter()
                .filter(|&&h| HOLE_MASKS[h as usize] & board == 0)
                .step_by(400)
                .copied()
                .collect();
            assert!((2..=FEW_HANDS).contains(&picked.len()));
            let a = fast.hand_action_probabilities(s, &picked).unwrap();
            let b = slow.hand_action_probabilities(s, &picked).unwrap();
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    x.iter().zip(y).all(|(u, v)| (u - v).abs() < 1e-5),
                    "{x:?} vs {y:?}"
                );
            }
            picked.len() as u64
        };
        let mut s = dealt_fcpa();
        let n0 = few(&s);
        s.apply(1); // call
        let n1 = few(&s);
        let st = fast.range_stats();
        assert_eq!(
            (st.few_queries, st.queries, st.head_passes),
            (2, 0, 0),
            "{st:?}"
        );
        // Recurrent: from the root, one step for the first query and two for the second.
        let stepped = if recurrent { n0 + 2 * n1 } else { 0 };
        assert_eq!(st.few_rows, stepped, "{st:?}");
        // A whole-range query keeps this state; a few-hand query one decision later starts
        // from it (one step).
        same_ranges(&fast, &slow, &s);
        s.apply(1); // check: the flop
        for c in parse_cards("Qh8d4s").unwrap() {
            s.apply(c as Action);
        }
        let n2 = few(&s);
        let st2 = fast.range_stats();
        assert_eq!((st2.queries, st2.few_queries), (1, 3), "{st2:?}");
        assert_eq!(st2.few_rows - st.few_rows, if recurrent { n2 } else { 0 });
        // The few-hand query kept nothing: a whole-range query here computes the state.
        same_ranges(&fast, &slow, &s);
        assert_eq!(fast.range_stats().head_passes, 2);
    }
}

/// LBR-FC and LBR-FCPA on a few deals give the same results with the fast range path as
/// with the replay-every-hand path (same seed, same sampled actions).
#[test]
fn lbr_against_a_network_is_the_same_on_both_range_paths() {
    use crate::eval::lbr::{LbrOptions, LbrVariant, run_lbr};
    for recurrent in [true, false] {
        let (game, net) = small_net(recurrent, 9);
        let fast = ArmacAveragePolicy::new(net.clone(), game.clone(), 0);
        let slow = ArmacAveragePolicy::new(net, game, 0).with_incremental_ranges(false);
        for variant in [LbrVariant::Fc, LbrVariant::Fcpa] {
            let mut opts = LbrOptions::new(variant, 8);
            opts.seed = 17;
            opts.threads = 1;
            opts.preflop_samples = 200;
            let g = UniversalPokerGame::hunl_fcpa();
            let a = run_lbr(&g, &fast, &opts, None).unwrap();
            let b = run_lbr(&g, &slow, &opts, None).unwrap();
            assert_eq!(a.hands, 8);
            assert_eq!(
                (a.mean_chips, a.seat_mean_chips),
                (b.mean_chips, b.seat_mean_chips),
                "recurrent {recurrent}, {variant}"
            );
        }
        assert!(fast.range_stats().queries > 0);
    }
}

/// The batched tensor query gives, row for row, the probabilities that `action_probabilities`
/// gives state by state (average and current policy), is 0 at illegal actions, and refuses
/// rows of the wrong width and recurrent networks.
#[test]
fn tensor_queries_match_state_queries() {
    use crate::policy::Policy;
    let (game, net) = small_net(false, 5);
    let mut rng = crate::util::SplitMix64::new(9);
    let (width, actions) = (
        game.information_state_tensor_size(),
        game.num_distinct_actions(),
    );
    let mut states = Vec::new();
    while states.len() < 40 {
        let mut s = game.new_initial_state();
        while !s.is_terminal() {
            if let Turn::Player(_) = s.turn() {
                states.push(s.clone());
            }
            let legal = s.legal_actions();
            s.apply_action(legal[rng.below(legal.len())]);
        }
    }
    for current in [false, true] {
        let policy =
            ArmacAveragePolicy::new(net.clone(), game.clone(), 0).with_current_policy(current);
        let (mut info, mut legal) = (Vec::new(), Vec::new());
        for s in &states {
            let Turn::Player(p) = s.turn() else {
                unreachable!()
            };
            info.extend(crate::game::information_state_tensor_vec(
                game.as_ref(),
                s.as_ref(),
                p,
            ));
            let mut mask = vec![false; actions];
            for a in s.legal_actions() {
                mask[a] = true;
            }
            legal.extend(mask);
        }
        let batched = policy
            .tensor_probabilities(&info, &legal, states.len())
            .unwrap();
        for (r, s) in states.iter().enumerate() {
            let single = policy.action_probabilities(s.as_ref()).unwrap();
            let row = &batched[r * actions..(r + 1) * actions];
            for (&a, &p) in s.legal_actions().iter().zip(&single) {
                assert!((row[a] - p).abs() < 1e-6, "row {r} action {a}");
            }
            let legal_sum: f64 = s.legal_actions().iter().map(|&a| row[a]).sum();
            assert!((legal_sum - 1.0).abs() < 1e-9);
            assert!((row.iter().sum::<f64>() - legal_sum).abs() < 1e-12);
        }
        let e = policy
            .tensor_probabilities(&info[..width - 1], &legal[..actions], 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tensor entries"), "{e}");
    }
    let (game, net) = small_net(true, 5);
    let e = ArmacAveragePolicy::new(net, game.clone(), 0)
        .tensor_probabilities(&[], &[], 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("recurrent"), "{e}");
}

/// Thresholding by hand: actions below the threshold go, the rest are renormalised; with
/// none left the most likely action alone stays; 0 changes nothing.
#[test]
fn threshold_drops_small_probabilities() {
    let mut p = [0.05, 0.15, 0.8, 0.0];
    threshold_probs(&mut p, 0.1);
    let want = [0.0, 0.15 / 0.95, 0.8 / 0.95, 0.0];
    assert!(
        p.iter().zip(want).all(|(x, y)| (x - y).abs() < 1e-12),
        "{p:?}"
    );
    let mut p = [0.3, 0.3, 0.4];
    threshold_probs(&mut p, 0.6);
    assert_eq!(p, [0.0, 0.0, 1.0]);
    let mut p = [0.05, 0.95];
    threshold_probs(&mut p, 0.0);
    assert_eq!(p, [0.05, 0.95]);
}

/// A thresholded network answers the same on every query path (single states, tensors, fast
/// and replayed ranges), and each answer is the unthresholded one thresholded.
#[test]
fn every_query_path_applies_the_threshold() {
    use crate::policy::Policy;
    let tau = 0.26;
    let (game, net) = small_net(false, 5);
    for current in [false, true] {
        let raw =
            ArmacAveragePolicy::new(net.clone(), game.clone(), 0).with_current_policy(current);
        let fast = ArmacAveragePolicy::new(net.clone(), game.clone(), 0)
            .with_current_policy(current)
            .with_threshold(tau);
        let slow = ArmacAveragePolicy::new(net.clone(), game.clone(), 0)
            .with_current_policy(current)
            .with_incremental_ranges(false)
            .with_threshold(tau);
        let name = Policy::name(&fast);
        assert!(name.contains("threshold 0.26"), "{name}");
        let mut s = dealt_fcpa();
        let mut dropped = 0;
        for step in [1, 2, 1] {
            let (p, hands) = live_hands(&s, 97);
            let a = fast.hand_action_probabilities(&s, &hands).unwrap();
            let b = slow.hand_action_probabilities(&s, &hands).unwrap();
            let r = raw.hand_action_probabilities(&s, &hands).unwrap();
            for (i, &h) in hands.iter().enumerate() {
                let mut want = r[i];
                threshold_probs(&mut want, tau);
                for k in 0..4 {
                    assert!((a[i][k] - want[k]).abs() < 1e-6, "{:?} vs {want:?}", a[i]);
                    assert!((b[i][k] - want[k]).abs() < 1e-5, "{:?} vs {want:?}", b[i]);
                    assert!(a[i][k] == 0.0 || a[i][k] >= tau, "{:?}", a[i]);
                }
                dropped += (0..4).filter(|&k| r[i][k] > 0.0 && a[i][k] == 0.0).count();
                // The per-state query of that hand agrees.
                let hs = crate::eval::lbr::with_hole_cards(&s, p, h as usize).unwrap();
                let single = fast.action_probabilities(&hs).unwrap();
                for (&act, &q) in hs.legal_actions().iter().zip(&single) {
                    assert!((q - a[i][act]).abs() < 1e-6, "hand {h} action {act}");
                }
            }
            s.apply(step);
        }
        assert!(
            dropped > 0,
            "the threshold should drop some actions of a random net"
        );
    }
}

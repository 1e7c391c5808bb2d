use super::decision::{HandCtx, decision_at, opponent_action, play_hand, update_range};
use super::deck::Deck;
use super::equity::{AliasTable, general_win_probability};
use super::play::{deal_cards, derive_seed};
use super::*;
use crate::game::Action;
use crate::game::State;
use crate::game::Turn;
use crate::games::cards::CardSet;
use crate::games::cards::HOLE_CARDS;
use crate::games::cards::HOLE_MASKS;
use crate::games::cards::NUM_HOLE_HANDS;
use crate::games::cards::{hole_index, parse_cards};
use crate::games::hand_eval::evaluate7;
use crate::games::universal_poker::UniversalPokerGame;
use crate::games::universal_poker::UniversalPokerState;
use crate::policy::Policy;
use crate::policy::UniformPolicy;
use crate::util::SplitMix64;

fn game() -> UniversalPokerGame {
    UniversalPokerGame::hunl_fcpa()
}

fn cards(s: &str) -> Vec<u8> {
    parse_cards(s).unwrap()
}

fn hole(s: &str) -> (u8, u8) {
    let c = cards(s);
    (c[0], c[1])
}

/// A non-uniform range: weight depends on the hand index, some hands zero.
fn skewed_range(seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..NUM_HOLE_HANDS)
        .map(|_| {
            let x = rng.next_f64();
            if x < 0.2 { 0.0 } else { x * x }
        })
        .collect()
}

/// Brute force: every compatible opponent hand, every completion of the board, evaluate7.
fn brute_force_wp(hole: (u8, u8), board: &[u8], range: &[f64]) -> f64 {
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let (mut num, mut den) = (0.0, 0.0);
    for h in 0..NUM_HOLE_HANDS {
        if range[h] == 0.0 || HOLE_MASKS[h] & dead.0 != 0 {
            continue;
        }
        let (a, b) = HOLE_CARDS[h];
        let left: Vec<u8> = (0..52u8)
            .filter(|&c| !dead.contains(c) && c != a && c != b)
            .collect();
        let mut completions: Vec<Vec<u8>> = vec![vec![]];
        for _ in board.len()..5 {
            completions = completions
                .into_iter()
                .flat_map(|v| {
                    let start = v.last().map_or(0, |&l| l + 1);
                    left.iter()
                        .filter(move |&&c| c >= start)
                        .map(move |&c| {
                            let mut w = v.clone();
                            w.push(c);
                            w
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        let mut score = 0.0;
        for extra in &completions {
            let mut full = board.to_vec();
            full.extend(extra);
            let mut ours = [0u8; 7];
            let mut theirs = [0u8; 7];
            ours[..5].copy_from_slice(&full);
            theirs[..5].copy_from_slice(&full);
            (ours[5], ours[6]) = hole;
            (theirs[5], theirs[6]) = (a, b);
            let (x, y) = (evaluate7(&ours), evaluate7(&theirs));
            score += if x > y {
                1.0
            } else if x == y {
                0.5
            } else {
                0.0
            };
        }
        num += range[h] * score / completions.len() as f64;
        den += range[h];
    }
    num / den
}

#[test]
fn equity_matches_brute_force_river_turn_flop() {
    let mut rng = SplitMix64::new(1);
    let spots = [
        ("AsKd", "2c7h9dTsJc", 3),
        ("7c7d", "2c7h9dTs", 4),
        ("Qh2h", "3h8hKc", 5),
    ];
    for (h, b, seed) in spots {
        let range = skewed_range(seed);
        let fast = win_probability(hole(h), &cards(b), &range, 0, &mut rng);
        let slow = brute_force_wp(hole(h), &cards(b), &range);
        assert!((fast - slow).abs() < 1e-12, "{h} on {b}: {fast} vs {slow}");
    }
    // A river tie: the board plays for everyone.
    let uniform = vec![1.0; NUM_HOLE_HANDS];
    let wp = win_probability(hole("2c3d"), &cards("AsKsQsJsTs"), &uniform, 0, &mut rng);
    assert_eq!(wp, 0.5);
}

#[test]
fn preflop_equity_is_close_to_known_values() {
    let mut rng = SplitMix64::new(7);
    let uniform = vec![1.0; NUM_HOLE_HANDS];
    // AA vs a random hand: 85.2%; 72o: 34.6%; AA vs KK (no shared suits): about 82%.
    let aa = win_probability(hole("AsAh"), &[], &uniform, 40_000, &mut rng);
    assert!((aa - 0.852).abs() < 0.01, "{aa}");
    let trash = win_probability(hole("7c2d"), &[], &uniform, 40_000, &mut rng);
    assert!((trash - 0.346).abs() < 0.01, "{trash}");
    let mut kk = vec![0.0; NUM_HOLE_HANDS];
    kk[hole_index(cards("Kc")[0], cards("Kd")[0])] = 1.0;
    let aa_kk = win_probability(hole("AsAh"), &[], &kk, 40_000, &mut rng);
    assert!((aa_kk - 0.823).abs() < 0.012, "{aa_kk}");
    // Seeded: the same generator state gives the same estimate.
    let a = win_probability(hole("9s8s"), &[], &uniform, 1000, &mut SplitMix64::new(3));
    let b = win_probability(hole("9s8s"), &[], &uniform, 1000, &mut SplitMix64::new(3));
    assert_eq!(a, b);
}

#[test]
fn alias_table_draws_in_proportion() {
    let weights = [0.5, 0.0, 3.0, 1.5, 1e-3, 5.0];
    let table = AliasTable::new(&weights);
    let mut rng = SplitMix64::new(11);
    let n = 400_000;
    let mut counts = [0usize; 6];
    for _ in 0..n {
        counts[table.sample(&mut rng)] += 1;
    }
    let total: f64 = weights.iter().sum();
    for (c, w) in counts.iter().zip(weights) {
        let p = w / total;
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (*c as f64 / n as f64 - p).abs() <= 5.0 * sd + 1e-12,
            "{counts:?}"
        );
    }
    assert_eq!(counts[1], 0);
}

#[test]
fn card_removal_and_bayes() {
    let mine = CardSet::from_cards(&cards("AsKd"));
    let mut r = Range::uniform(mine);
    assert_eq!(r.support().len(), 1225); // C(50, 2)
    assert!((r.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    r.remove_cards(CardSet::from_cards(&cards("2c7h9d")));
    assert_eq!(r.support().len(), 1081); // C(47, 2)
    for h in r.support() {
        assert_eq!(
            HOLE_MASKS[h as usize] & CardSet::from_cards(&cards("AsKd2c7h9d")).0,
            0
        );
    }
    // Posterior ∝ prior × likelihood.
    let prior = r.clone();
    let hands = r.support();
    let like: Vec<f64> = hands.iter().map(|&h| (h % 7) as f64 / 6.0).collect();
    let evidence = r.update(&hands, &like);
    let expected_evidence: f64 = hands
        .iter()
        .zip(&like)
        .map(|(&h, &l)| prior.weights()[h as usize] * l)
        .sum();
    assert!((evidence - expected_evidence).abs() < 1e-15);
    for (&h, &l) in hands.iter().zip(&like) {
        let want = prior.weights()[h as usize] * l / expected_evidence;
        assert!((r.weights()[h as usize] - want).abs() < 1e-15);
    }
    assert!(r.weights().iter().all(|&w| w >= 0.0));
    // Impossible observation: unchanged.
    let before = r.clone();
    assert_eq!(r.update(&hands, &vec![0.0; hands.len()]), 0.0);
    assert_eq!(r, before);
}

/// Folds with probability 1 holding an ace, else calls; reads its cards from the state.
struct FoldAces;
impl Policy for FoldAces {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        let Turn::Player(p) = state.turn() else {
            return Err(PolicyError::NotADecision);
        };
        let (a, b) = HOLE_CARDS[state.private_state(p)];
        let ace = a >= 48 || b >= 48;
        let legal = state.legal_actions();
        let target = if ace && legal.contains(&FOLD) {
            FOLD
        } else {
            CALL
        };
        Ok(legal.iter().map(|&x| (x == target) as u8 as f64).collect())
    }
    fn name(&self) -> String {
        "fold-aces".into()
    }
}

#[test]
fn per_hand_adapter_substitutes_hole_cards() {
    let g = game();
    let mut s = g.initial_state();
    for c in cards("AsKd2c3d") {
        s.apply(c as Action);
    }
    // P1 (small blind) to act, facing the big blind.
    assert_eq!(s.turn(), Turn::Player(1));
    let same = with_hole_cards(&s, 1, hole_index(cards("2c")[0], cards("3d")[0])).unwrap();
    assert_eq!(
        same.information_state_string(1),
        s.information_state_string(1)
    );
    assert_eq!(
        same.information_state_string(0),
        s.information_state_string(0)
    );
    assert!(with_hole_cards(&s, 1, hole_index(cards("As")[0], cards("4d")[0])).is_none());
    let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
        .filter(|&h| HOLE_MASKS[h as usize] & CardSet::from_cards(&cards("AsKd")).0 == 0)
        .collect();
    let probs = PerHand(FoldAces)
        .hand_action_probabilities(&s, &hands)
        .unwrap();
    for (&h, p) in hands.iter().zip(&probs) {
        let (a, b) = HOLE_CARDS[h as usize];
        let want = if a >= 48 || b >= 48 {
            [1.0, 0.0, 0.0, 0.0]
        } else {
            [0.0, 1.0, 0.0, 0.0]
        };
        assert_eq!(*p, want, "hand {h}");
    }
    // The hand-independent policies agree with their per-hand adapters.
    for (direct, adapted) in [
        (
            &UniformPolicy as &dyn RangePolicy,
            &PerHand(UniformPolicy) as &dyn RangePolicy,
        ),
        (&AlwaysFold, &PerHand(AlwaysFold)),
        (&AlwaysCall, &PerHand(AlwaysCall)),
    ] {
        let x = direct.hand_action_probabilities(&s, &hands[..50]).unwrap();
        let y = adapted.hand_action_probabilities(&s, &hands[..50]).unwrap();
        assert_eq!(x, y, "{}", direct.name());
    }
}

#[test]
fn opponent_range_follows_bayes_in_play() {
    // LBR (P0, big blind) watches P1 call pre-flop with FoldAces: afterwards no hand
    // with an ace is left in the range.
    let g = game();
    let policy = PerHand(FoldAces);
    let deck = Deck::new(g.config());
    let ctx = HandCtx {
        policy: &policy,
        deck: &deck,
        variant: LbrVariant::Fc,
        preflop_samples: 100,
        defer: true,
        rule: LbrRule::Standard,
    };
    let mut s = g.initial_state();
    for c in cards("KsKd2c3d") {
        s.apply(c as Action);
    }
    let mut range = Range::uniform(CardSet::from_cards(&cards("KsKd")));
    let mut rng = SplitMix64::new(0);
    let actual = hole_index(cards("2c")[0], cards("3d")[0]) as u16;
    let a = opponent_action(&ctx, &s, actual, &mut rng).unwrap();
    assert_eq!(a, CALL);
    update_range(&ctx, &s, a, actual, &mut range).unwrap();
    let support = range.support();
    let no_ace = |h: &u16| HOLE_CARDS[*h as usize].1 < 48;
    assert!(support.iter().all(no_ace));
    // 50 cards left, 46 of them not aces: C(46, 2) hands, uniform.
    assert_eq!(support.len(), 1035);
    let w = range.weights()[actual as usize];
    assert!(
        support
            .iter()
            .all(|&h| (range.weights()[h as usize] - w).abs() < 1e-15)
    );
}

/// Hand- and history-dependent probabilities with folds and raises (a hash of the hand,
/// the public history and the action); counts the rows it is asked for.
#[derive(Default)]
struct Hashed {
    rows: std::sync::atomic::AtomicU64,
}

impl RangePolicy for Hashed {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        self.rows
            .fetch_add(hands.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let legal = state.legal_mask();
        // The public history: everything after the four hole-card deals.
        let history: Vec<u64> = state.history()[4..].iter().map(|&a| a as u64).collect();
        let public = derive_seed(&history);
        Ok(hands
            .iter()
            .map(|&h| {
                let mut row = [0.0; 4];
                for (a, x) in row.iter_mut().enumerate() {
                    if legal >> a & 1 != 0 {
                        *x = 1.0 + (derive_seed(&[public, h as u64, a as u64]) % 9) as f64;
                    }
                }
                let total: f64 = row.iter().sum();
                row.map(|x| x / total)
            })
            .collect())
    }
    fn name(&self) -> String {
        "hashed".into()
    }
}

/// Deferring the range's updates to LBR's next decision that reads it changes no hand's
/// result (every variant, both seats), and asks the policy for fewer rows.
#[test]
fn deferred_range_updates_play_the_same_hands() {
    let g = game();
    let deck = Deck::new(g.config());
    for variant in LbrVariant::ALL {
        let (lazy, eager) = (Hashed::default(), Hashed::default());
        let mut outcomes = std::collections::HashSet::new();
        for deal in 0..24u64 {
            let mut rng = SplitMix64::new(derive_seed(&[7, deal]));
            let cards = deal_cards(&deck, &mut rng);
            for seat in 0..2 {
                let seed = derive_seed(&[deal, seat as u64]);
                let play = |policy: &Hashed, defer: bool| {
                    let ctx = HandCtx {
                        policy,
                        deck: &deck,
                        variant,
                        preflop_samples: 200,
                        defer,
                        rule: LbrRule::Standard,
                    };
                    play_hand(&ctx, &g, seat, &cards, &mut SplitMix64::new(seed))
                        .unwrap()
                        .returns()[seat]
                };
                let (x, y) = (play(&lazy, true), play(&eager, false));
                assert_eq!(x, y, "{variant}, deal {deal}, seat {seat}");
                outcomes.insert(x.to_bits());
            }
        }
        // The hands are not all alike (folds, showdowns, different pots).
        assert!(outcomes.len() > 5, "{variant}: {outcomes:?}");
        let rows = |p: &Hashed| p.rows.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            rows(&lazy) < rows(&eager),
            "{variant}: {} rows vs {}",
            rows(&lazy),
            rows(&eager)
        );
    }
}

#[test]
fn utilities_follow_lisy_bowling() {
    // Pot 300 (150 each), nothing asked, wp 0.6; a pot bet x = 300 folded to half the time.
    let (call, raises) = lbr_utilities(300.0, 0.0, 0.6, &[(300.0, 0.5)]);
    assert!((call - 180.0).abs() < 1e-12);
    let want = 0.5 * 300.0 + 0.5 * (0.6 * 600.0 - 0.4 * 300.0);
    assert!((raises[0] - want).abs() < 1e-12);
    // Facing a bet: pot 400 (100 vs 300), asked 200: calling needs wp > 1/3.
    let (call, _) = lbr_utilities(400.0, 200.0, 1.0 / 3.0, &[]);
    assert!(call.abs() < 1e-12);
}

fn run(policy: &dyn RangePolicy, variant: LbrVariant, hands: u64, threads: usize) -> LbrResult {
    let mut opts = LbrOptions::new(variant, hands);
    opts.seed = 42;
    opts.threads = threads;
    opts.preflop_samples = 5000;
    opts.keep_deal_means = true;
    run_lbr(&game(), policy, &opts, None).unwrap()
}

#[test]
fn without_deal_means_a_run_keeps_only_its_sums_and_reports_the_same() {
    let kept = run(&UniformPolicy, LbrVariant::Fc, 64, 2);
    let mut opts = LbrOptions::new(LbrVariant::Fc, 64);
    opts.seed = 42;
    opts.threads = 2;
    opts.preflop_samples = 5000;
    let summed = run_lbr(&game(), &UniformPolicy, &opts, None).unwrap();
    assert!(summed.deal_means.is_empty());
    assert_eq!(summed.mean_chips, kept.mean_chips);
    assert_eq!(summed.seat_mean_chips, kept.seat_mean_chips);
    // The two-pass variance of the kept means, against the running sums'.
    let n = kept.deal_means.len() as f64;
    let var = kept
        .deal_means
        .iter()
        .map(|m| (m - kept.mean_chips).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    let ci = 1.96 * var.sqrt() / n.sqrt();
    assert!(
        (summed.ci95_chips - ci).abs() < 1e-9 * ci.max(1.0),
        "{summed:?} {ci}"
    );
}

#[test]
fn always_fold_exact_values() {
    // LBR-FC: +50 as big blind, 0 as small blind (checked down, the swapped deal
    // cancels): 25 chips = 250 mbb per hand. Raising variants: +50 and +100: 750 mbb.
    for (variant, mbb, seats) in [
        (LbrVariant::Fc, 250.0, [50.0, 0.0]),
        (LbrVariant::Fcpa, 750.0, [50.0, 100.0]),
        (LbrVariant::Fc12Fcpa34, 750.0, [50.0, 100.0]),
    ] {
        let r = run(&AlwaysFold, variant, 40, 2);
        assert_eq!(r.hands, 40);
        assert!((r.mean_mbb - mbb).abs() < 1e-9, "{variant}: {r:?}");
        assert!(r.ci95_mbb.abs() < 1e-9, "{variant}: {r:?}");
        assert_eq!(r.seat_mean_chips, seats, "{variant}");
    }
}

#[test]
fn paired_ratio_delta_method() {
    let result = |seed, deal_means: Vec<f64>| LbrResult {
        variant: "fcpa".into(),
        rule: None,
        policy: "p".into(),
        hands: 4 * deal_means.len() as u64,
        partial: false,
        mean_chips: 0.0,
        ci95_chips: 0.0,
        mean_mbb: 0.0,
        ci95_mbb: 0.0,
        seat_mean_chips: [0.0; 2],
        seconds: 0.0,
        seed,
        deal_means,
        breakdown: Vec::new(),
    };
    // By hand: r = 2 / 2, x − r y = (−1, 1), sd = sqrt(2), se = sqrt(2) / (sqrt(2) · 2).
    let r = paired_ratio(&result(1, vec![1.0, 3.0]), &result(1, vec![2.0, 2.0])).unwrap();
    assert_eq!(r.ratio, 1.0);
    assert!((r.ci95 - 1.96 * 0.5).abs() < 1e-12, "{r:?}");
    // A policy worth exactly half the reference on every deal: no uncertainty at all,
    // however much the deals themselves vary.
    let y = vec![10.0, -4.0, 30.0, 7.0];
    let x: Vec<f64> = y.iter().map(|v| 0.5 * v).collect();
    let r = paired_ratio(&result(1, x.clone()), &result(1, y.clone())).unwrap();
    assert!((r.ratio - 0.5).abs() < 1e-15 && r.ci95 < 1e-12, "{r:?}");
    // Results that do not pair up.
    assert!(paired_ratio(&result(1, x.clone()), &result(2, y.clone())).is_none());
    assert!(paired_ratio(&result(1, x[..3].to_vec()), &result(1, y)).is_none());
    assert!(paired_ratio(&result(1, vec![1.0, 2.0]), &result(1, vec![1.0, -1.0])).is_none());
    // One deal: a ratio without an interval.
    let r = paired_ratio(&result(1, vec![3.0]), &result(1, vec![4.0])).unwrap();
    assert!(r.ratio == 0.75 && r.ci95.is_nan(), "{r:?}");
}

#[test]
fn paired_ratio_of_real_runs_is_the_ratio_of_their_means() {
    let a = run(&AlwaysCall, LbrVariant::Fcpa, 64, 2);
    let b = run(&UniformPolicy, LbrVariant::Fcpa, 64, 2);
    assert_eq!(a.deal_means.len(), 16);
    let mean = |r: &LbrResult| r.deal_means.iter().sum::<f64>() / 16.0;
    assert!((mean(&a) - a.mean_chips).abs() < 1e-9);
    let r = paired_ratio(&a, &b).unwrap();
    assert!(
        (r.ratio - a.mean_chips / b.mean_chips).abs() < 1e-12,
        "{r:?}"
    );
    assert!(r.ci95.is_finite() && r.ci95 > 0.0, "{r:?}");
}

#[test]
fn deterministic_across_threads_and_rounds_hands_up() {
    let a = run(&UniformPolicy, LbrVariant::Fcpa, 22, 1);
    let b = run(&UniformPolicy, LbrVariant::Fcpa, 24, 2);
    assert_eq!(a.hands, 24);
    assert_eq!(
        (a.mean_chips, a.ci95_chips, a.seat_mean_chips),
        (b.mean_chips, b.ci95_chips, b.seat_mean_chips)
    );
    let c = LbrOptions {
        seed: 43,
        ..LbrOptions::new(LbrVariant::Fcpa, 24)
    };
    let c = run_lbr(&game(), &UniformPolicy, &c, None).unwrap();
    assert_ne!(a.mean_chips, c.mean_chips);
}

#[test]
fn beats_uniform_random() {
    for variant in LbrVariant::ALL {
        let r = run(&UniformPolicy, variant, 400, 0);
        assert!(r.mean_mbb - r.ci95_mbb > 0.0, "{variant}: {r:?}");
    }
}

#[test]
fn rejects_games_it_cannot_play() {
    let leduc_like = UniversalPokerGame::from_string(
        "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 100,numSuits=2,numRanks=6,numHoleCards=1,numBoardCards=0 1,stack=1200 1200)",
    );
    if let Ok(g) = leduc_like {
        let e = run_lbr(
            &g,
            &UniformPolicy,
            &LbrOptions::new(LbrVariant::Fc, 4),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, LbrError::UnsupportedGame(_)), "{e}");
    }
    let fc = UniversalPokerGame::from_string(
        &crate::games::universal_poker::HUNL_FCPA.replace("fcpa", "fc"),
    )
    .unwrap();
    assert!(check_game(fc.config(), LbrVariant::Fc).is_ok());
    assert!(check_game(fc.config(), LbrVariant::Fcpa).is_err());
    let e = run_lbr(
        &game(),
        &UniformPolicy,
        &LbrOptions::new(LbrVariant::Fc, 0),
        None,
    );
    assert!(matches!(e, Err(LbrError::Options(_))));
}

#[test]
fn missing_infostate_is_an_error() {
    let p = PerHand(crate::policy::TabularPolicy::new(
        crate::games::universal_poker::HUNL_FCPA,
    ));
    let e = run_lbr(&game(), &p, &LbrOptions::new(LbrVariant::Fc, 4), None).unwrap_err();
    assert!(
        e.to_string().contains("no entry for information state"),
        "{e}"
    );
}

/// The small no-limit game of tests/lbr_exact.rs: 2 suits x 4 ranks, pre-flop and flop.
const SMALL: &str = "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 50,firstPlayer=2 1,numSuits=2,numRanks=4,numHoleCards=2,numBoardCards=0 3,stack=2000 2000,bettingAbstraction=fcpa)";

fn small() -> UniversalPokerGame {
    UniversalPokerGame::from_string(SMALL).unwrap()
}

/// Every subset of `items` of size `k`.
fn subsets(items: &[u8], k: usize) -> Vec<Vec<u8>> {
    if k == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for (i, &c) in items.iter().enumerate() {
        for mut rest in subsets(&items[i + 1..], k - 1) {
            rest.insert(0, c);
            out.push(rest);
        }
    }
    out
}

/// Brute force on any deck: every compatible opponent hand, every completion of the board.
fn brute_force_general(deck: &Deck, hole: (u8, u8), board: &[u8], range: &[f64]) -> f64 {
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let (mut num, mut den) = (0.0, 0.0);
    for h in 0..NUM_HOLE_HANDS {
        let (a, b) = HOLE_CARDS[h];
        if range[h] == 0.0 || HOLE_MASKS[h] & dead.0 != 0 || !deck.set.contains(a) {
            continue;
        }
        if !deck.set.contains(b) {
            continue;
        }
        let left: Vec<u8> = deck
            .cards
            .iter()
            .copied()
            .filter(|&c| !dead.contains(c) && c != a && c != b)
            .collect();
        let completions = subsets(&left, deck.total_board - board.len());
        let mut score = 0.0;
        for extra in &completions {
            let common: Vec<u8> = board.iter().chain(extra).copied().collect();
            let ours =
                crate::games::hand_eval::evaluate(&[&[hole.0, hole.1], &common[..]].concat());
            let theirs = crate::games::hand_eval::evaluate(&[&[a, b], &common[..]].concat());
            score += match ours.cmp(&theirs) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            };
        }
        num += range[h] * score / completions.len() as f64;
        den += range[h];
    }
    num / den
}

#[test]
fn general_equity_matches_brute_force_and_the_holdem_path() {
    let mut rng = SplitMix64::new(5);
    let deck = Deck::new(small().config());
    assert!(!deck.holdem);
    assert_eq!(deck.cards, cards("2c2d3c3d4c4d5c5d"));
    for (h, b, seed) in [("5c5d", "", 1), ("2c4d", "", 2), ("3c4c", "2c5c5d", 3)] {
        let range = skewed_range(seed);
        let fast = general_win_probability(&deck, hole(h), &cards(b), &range, 0, &mut rng);
        let slow = brute_force_general(&deck, hole(h), &cards(b), &range);
        assert!((fast - slow).abs() < 1e-12, "{h} on {b}: {fast} vs {slow}");
    }
    // A pair of fives against a uniform range before the flop: it loses only to runouts
    // that beat it: a favourite, with the brute-force value.
    let uniform = vec![1.0; NUM_HOLE_HANDS];
    let wp = general_win_probability(&deck, hole("5c5d"), &[], &uniform, 0, &mut rng);
    let want = brute_force_general(&deck, hole("5c5d"), &[], &uniform);
    assert!(wp > 0.55 && (wp - want).abs() < 1e-12, "{wp} vs {want}");
    // On the Hold'em deck the general path (exact on the turn and the river) agrees with the
    // fast path, and samples the pre-flop.
    let holdem = Deck::new(game().config());
    assert!(holdem.holdem);
    for (h, b, seed) in [("AsKd", "2c7h9dTsJc", 3), ("7c7d", "2c7h9dTs", 4)] {
        let range = skewed_range(seed);
        let general = general_win_probability(&holdem, hole(h), &cards(b), &range, 0, &mut rng);
        let fast = win_probability(hole(h), &cards(b), &range, 0, &mut rng);
        assert!(
            (general - fast).abs() < 1e-12,
            "{h} on {b}: {general} vs {fast}"
        );
    }
    let full = vec![1.0; NUM_HOLE_HANDS];
    let aa = general_win_probability(&holdem, hole("AsAh"), &[], &full, 40_000, &mut rng);
    assert!((aa - 0.852).abs() < 0.01, "{aa}");
}

#[test]
fn hole_card_substitution_on_a_two_suit_deck() {
    let g = small();
    let mut s = g.initial_state();
    for outcome in 0..4 {
        s.apply(outcome); // 2c 2d to P0, 3c 3d to P1
    }
    assert_eq!(s.hole_cards(1), &cards("3c3d")[..]);
    assert_eq!(s.turn(), Turn::Player(1));
    let (a, b) = hole("4c5d");
    let t = with_hole_cards(&s, 1, hole_index(a, b)).unwrap();
    assert_eq!(t.hole_cards(1), &[a, b][..]);
    assert_eq!(t.hole_cards(0), s.hole_cards(0));
    assert_eq!(t.information_state_string(0), s.information_state_string(0));
    assert!(t.information_state_string(1).contains("[Private: 5d4c]"));
    // A card outside the deck (hearts) or already dealt (2c) cannot be substituted.
    assert!(with_hole_cards(&s, 1, hole_index(a, cards("5h")[0])).is_none());
    assert!(with_hole_cards(&s, 1, hole_index(a, cards("2c")[0])).is_none());
    // The range starts on the deck's hands only: C(6, 2) once LBR's pair is known.
    let deck = Deck::new(g.config());
    let r = Range::uniform_in(deck.set, CardSet::from_cards(&cards("2c2d")));
    assert_eq!(r.support().len(), 15);
}

/// [`decision_at`] replays a history to the action LBR took there in play: every LBR
/// decision of played hands (the small game, and Hold'em from the flop on, where no equity
/// is sampled), every variant, both seats.
#[test]
fn replayed_decisions_are_the_played_ones() {
    let policy = Hashed::default();
    for (g, deals) in [(small(), 40u64), (game(), 16)] {
        let deck = Deck::new(g.config());
        let mut compared = 0;
        for variant in LbrVariant::ALL {
            let ctx = HandCtx {
                policy: &policy,
                deck: &deck,
                variant,
                preflop_samples: 200,
                defer: true,
                rule: LbrRule::Standard,
            };
            for deal in 0..deals {
                let cards = deal_cards(&deck, &mut SplitMix64::new(derive_seed(&[3, deal])));
                for seat in 0..2 {
                    let mut rng = SplitMix64::new(derive_seed(&[deal, seat as u64]));
                    let end = play_hand(&ctx, &g, seat, &cards, &mut rng).unwrap();
                    let history = end.history();
                    let mut s = g.initial_state();
                    for (i, &a) in history.iter().enumerate() {
                        if s.turn() == Turn::Player(seat)
                            && (!deck.holdem || s.board_cards().len() >= 3)
                        {
                            let mut rng = SplitMix64::new(i as u64);
                            let replayed =
                                decision_at(&ctx, &g, seat, &history[..i], &mut rng).unwrap();
                            assert_eq!(replayed, a, "{variant}, deal {deal}, seat {seat}, at {i}");
                            compared += 1;
                        }
                        s.apply(a);
                    }
                }
            }
        }
        eprintln!("{}: {compared} decisions compared", g.config().load_string);
        assert!(compared > 2 * deals, "{compared} decisions compared");
    }
}

/// Deals chance outcomes (the lowest cards left) until a player is to move or the hand ends.
fn deal_lowest(state: &mut UniversalPokerState) {
    while state.turn() == Turn::Chance {
        let mask = state.chance_mask();
        state.apply(mask.trailing_zeros() as Action);
    }
}

#[test]
fn hands_are_classified_by_how_they_ended() {
    let g = game();
    // P1 (first to act pre-flop) shoves, P0 calls: an all-in showdown after P1's bet.
    let mut s = g.initial_state();
    deal_lowest(&mut s);
    s.apply(ALL_IN);
    s.apply(CALL);
    deal_lowest(&mut s);
    assert_eq!(s.turn(), Turn::Terminal);
    let shove = HandEnd::Showdown {
        all_in: true,
        last_bet: Some((Side::Policy, 0)),
    };
    assert_eq!(classify(&g, &s, 0), shove);
    assert_eq!(
        shove.label(4),
        "showdown, all in, last bet by policy pre-flop"
    );
    assert_eq!(
        classify(&g, &s, 1),
        HandEnd::Showdown {
            all_in: true,
            last_bet: Some((Side::Lbr, 0)),
        }
    );
    // P1 limps, P0 raises the pot, P1 folds.
    let mut s = g.initial_state();
    deal_lowest(&mut s);
    for a in [CALL, BET, FOLD] {
        s.apply(a);
    }
    let fold = classify(&g, &s, 0);
    assert_eq!(
        fold,
        HandEnd::Fold {
            by: Side::Policy,
            round: 0
        }
    );
    assert_eq!(fold.label(4), "policy folds pre-flop");
    let later = HandEnd::Fold {
        by: Side::Lbr,
        round: 1,
    };
    assert_eq!(later.label(4), "LBR folds on the flop");
    assert_eq!(later.label(2), "LBR folds in round 2");
    // Checked down to the river: a showdown with no bet, not all in.
    let mut s = g.initial_state();
    while s.turn() != Turn::Terminal {
        deal_lowest(&mut s);
        if s.turn() != Turn::Terminal {
            s.apply(CALL);
        }
    }
    let end = classify(&g, &s, 1);
    assert_eq!(
        end,
        HandEnd::Showdown {
            all_in: false,
            last_bet: None
        }
    );
    assert_eq!(end.label(4), "showdown, not all in, no bet");
}

#[test]
fn breakdown_of_always_fold_adds_up_to_the_mean() {
    for variant in LbrVariant::ALL {
        let r = run(&AlwaysFold, variant, 40, 2);
        let total: f64 = r.breakdown.iter().map(|row| row.share_mbb).sum();
        assert!((total - r.mean_mbb).abs() < 1e-9, "{variant}: {r:?}");
        assert_eq!(r.breakdown.iter().map(|row| row.hands).sum::<u64>(), 40);
        let folds = HandEnd::Fold {
            by: Side::Policy,
            round: 0,
        };
        let checked = HandEnd::Showdown {
            all_in: false,
            last_bet: None,
        };
        let ends: Vec<(HandEnd, u64)> =
            r.breakdown.iter().map(|row| (row.end, row.hands)).collect();
        if variant == LbrVariant::Fc {
            // As big blind LBR wins the small blind; as small blind it limps and checks down.
            assert_eq!(ends, vec![(folds, 20), (checked, 20)], "{r:?}");
            assert_eq!(r.breakdown[0].mean_mbb, 500.0);
        } else if variant == LbrVariant::Fcpa {
            // LBR raises as small blind: the policy folds every hand pre-flop.
            assert_eq!(ends, vec![(folds, 40)], "{r:?}");
        }
    }
}

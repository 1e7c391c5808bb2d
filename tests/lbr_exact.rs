//! Local Best Response checked against the exact best response on a small no-limit FCPA game
//! whose whole tree compiles: 2 suits x 4 ranks (8 cards), 2 hole cards, pre-flop and a
//! 3-card flop, blinds 50/100 and stacks of 20 big blinds (4.3 M histories). LBR is a pure
//! strategy of the game, so its exact expected winnings ([`exact_lbr`]) can never exceed the
//! best response's value, in either seat, against any policy; and LBR's played hands
//! ([`play_deal`]) must average to that exact value within their sampling error. Both hold for
//! Lisý & Bowling's rule and for the sharp rule ([`LbrRule::Sharp`]), which must also beat the
//! standard rule clearly against at least one policy. The policies include thresholded
//! tables, endgame solving and a Student of Games search policy ([`sog_case`]). (With five
//! ranks the same game has more than 60 M histories, over the tree compiler's 20 M cap.)

use armac::cfr::{SolverSpec, TabularSolver};
use armac::eval::lbr::{
    ActionProbs, AlwaysCall, ExactLbr, LbrOptions, LbrRule, LbrVariant, PerHand, RangePolicy,
    check_game, exact_lbr, exact_lbr_with_rule, play_deal, run_lbr,
};
use armac::eval::{best_response, on_policy_values, tree_policy};
use armac::game::State;
use armac::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use armac::policy::{Policy, PolicyError, TabularPolicy, UniformPolicy};
use armac::rl::armac::policy::threshold_probs;
use armac::search::endgame::EndgamePolicy;
use armac::tree::{PublicTree, TreeOptions, TreePolicy};
use armac::util::SplitMix64;
use std::sync::Arc;

/// The small no-limit FCPA game.
const SMALL: &str = "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 50,firstPlayer=2 1,numSuits=2,numRanks=4,numHoleCards=2,numBoardCards=0 3,stack=2000 2000,bettingAbstraction=fcpa)";

fn small_game() -> UniversalPokerGame {
    UniversalPokerGame::from_string(SMALL).unwrap()
}

/// The tree with chance runs merged: one infoset per information-state string.
fn small_tree(game: &UniversalPokerGame) -> Arc<PublicTree> {
    let options = TreeOptions {
        merge_chance: true,
        ..TreeOptions::default()
    };
    Arc::new(PublicTree::build_with_options(game, options).unwrap())
}

/// A tree policy as a table keyed by information-state string (labels are unique in the
/// merged tree).
fn tabular(tree: &PublicTree, arrays: &TreePolicy) -> TabularPolicy {
    let mut table = TabularPolicy::new(&tree.game);
    for (inf, flat) in tree.infosets.iter().zip(arrays) {
        for i in 0..inf.len() {
            let row = inf.range(i).map(|k| (inf.actions[k], flat[k])).collect();
            assert!(table.table.insert(inf.key[i].clone(), row).is_none());
        }
    }
    table
}

/// `arrays` with every row mixed with a random distribution: `(1 - w) p + w q`, `q` drawn
/// per infoset from `seed`.
fn perturbed(tree: &PublicTree, arrays: &TreePolicy, w: f64, seed: u64) -> TreePolicy {
    let mut rng = SplitMix64::new(seed);
    let mut out = arrays.clone();
    for (inf, flat) in tree.infosets.iter().zip(out.iter_mut()) {
        for i in 0..inf.len() {
            let r = inf.range(i);
            let q: Vec<f64> = r.clone().map(|_| rng.next_f64() + 1e-3).collect();
            let total: f64 = q.iter().sum();
            for (k, x) in r.zip(&q) {
                flat[k] = (1.0 - w) * flat[k] + w * x / total;
            }
        }
    }
    out
}

/// A policy under test: its tree arrays (for the best response) and its range form (for LBR).
struct Case {
    name: String,
    arrays: TreePolicy,
    lbr: Box<dyn RangePolicy>,
}

fn from_policy<P: Policy + RangePolicy + 'static>(
    tree: &PublicTree,
    game: &UniversalPokerGame,
    p: P,
) -> Case {
    Case {
        name: Policy::name(&p),
        arrays: tree_policy(tree, game, &p).unwrap(),
        lbr: Box::new(p),
    }
}

fn from_arrays(name: &str, tree: &PublicTree, arrays: TreePolicy) -> Case {
    Case {
        name: name.into(),
        lbr: Box::new(PerHand(tabular(tree, &arrays))),
        arrays,
    }
}

/// `arrays` played with a threshold (as ARMAC networks play): every probability below `t`
/// dropped and the row renormalised.
fn thresholded(tree: &PublicTree, arrays: &TreePolicy, t: f64) -> TreePolicy {
    let mut out = arrays.clone();
    for (inf, flat) in tree.infosets.iter().zip(out.iter_mut()) {
        for i in 0..inf.len() {
            threshold_probs(&mut flat[inf.range(i)], t);
        }
    }
    out
}

/// A table answering both per-state and range queries (what endgame solving needs of its
/// blueprint).
struct Table(PerHand<TabularPolicy>);

impl Policy for Table {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        self.0.0.action_probabilities(state)
    }

    fn name(&self) -> String {
        self.0.0.name()
    }
}

impl RangePolicy for Table {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        self.0.hand_action_probabilities(state, hands)
    }

    fn name(&self) -> String {
        Policy::name(self)
    }
}

fn cfr_plus(tree: &Arc<PublicTree>, iterations: u64) -> TreePolicy {
    let mut solver = TabularSolver::new(tree.clone(), SolverSpec::named("cfr+").unwrap());
    while solver.iteration() < iterations {
        solver.iterate();
    }
    solver.average_policy()
}

fn cases(tree: &Arc<PublicTree>, game: &UniversalPokerGame) -> Vec<Case> {
    let few = cfr_plus(tree, 3);
    let many = cfr_plus(tree, 150);
    let noisy = perturbed(tree, &many, 0.3, 11);
    let cut = thresholded(tree, &few, 0.2);
    // The flop solved at play time (20 CFR+ iterations) over the 3-iteration blueprint.
    let blueprint = Table(PerHand(tabular(tree, &few)));
    let endgame = EndgamePolicy::new(blueprint, small_game(), 20).unwrap();
    let mut endgame = from_policy(tree, game, endgame);
    endgame.name = "cfr+ 3 iterations, flop solved (20 cfr+ iterations)".into();
    vec![
        from_policy(tree, game, UniformPolicy),
        from_policy(tree, game, AlwaysCall),
        from_arrays("cfr+ 3 iterations", tree, few),
        from_arrays("cfr+ 3 iterations, threshold 0.2", tree, cut),
        endgame,
        from_arrays("cfr+ 150 iterations", tree, many),
        from_arrays("cfr+ 150, perturbed 30%", tree, noisy),
        sog_case(tree, game, 10),
    ]
}

#[test]
fn lbr_never_beats_the_exact_best_response() {
    let game = small_game();
    let t = std::time::Instant::now();
    let tree = small_tree(&game);
    eprintln!(
        "{SMALL}: {} histories, infosets {:?} (merged chance), built in {:.1} s",
        tree.stats.histories,
        tree.num_infosets(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(tree.stats.histories, 4_344_881);
    // OpenSpiel 2.0.2 has 10,248 information states per player (the keys of one C++ CFR
    // iteration's policy table; `scripts/check_lbr_openspiel.py --game-check` prints them).
    assert_eq!(tree.num_infoset_labels(), [10_248, 10_248]);
    assert_eq!(tree.num_infosets(), [10_248, 10_248]);
    // The largest gain of the sharp rule over the standard one (mean of the seats, chips).
    let mut sharpest = (f64::NEG_INFINITY, String::new());
    for case in cases(&tree, &game) {
        let gain = check_case(&tree, &game, &case);
        if gain.0 > sharpest.0 {
            sharpest = gain;
        }
    }
    // The rule is not a no-op: against some policy that folds selectively it wins clearly
    // more than Lisý & Bowling's.
    eprintln!("largest gain of the sharp rule: {sharpest:?}");
    assert!(
        sharpest.0 > SHARP_MARGIN,
        "the sharp rule never beats the standard one by {SHARP_MARGIN} chips/hand: {sharpest:?}"
    );
}

/// Checks one policy against the exact best response: every LBR variant, with either rule, in
/// either seat, is never above it, and LBR beats the policies far from equilibrium. Returns
/// the sharp rule's largest gain over the standard one (chips per hand) and where.
fn check_case(tree: &PublicTree, game: &UniversalPokerGame, case: &Case) -> (f64, String) {
    let big_blind = 100.0;
    let mut sharpest = (f64::NEG_INFINITY, String::new());
    let br = [
        best_response(tree, 0, &case.arrays[1]).0,
        best_response(tree, 1, &case.arrays[0]).0,
    ];
    let on = on_policy_values(tree, &case.arrays);
    eprintln!(
        "{}: best response {:.3} / {:.3} chips as P0 / P1 (mean {:.0} mbb/hand), \
         on-policy {:.3} / {:.3}",
        case.name,
        br[0],
        br[1],
        500.0 * (br[0] + br[1]) / big_blind,
        on[0],
        on[1]
    );
    let mut best_lbr = [f64::NEG_INFINITY; 2];
    let mut standard = Vec::new();
    for variant in LbrVariant::ALL {
        let t = std::time::Instant::now();
        let ExactLbr {
            seat_values,
            decisions,
            ..
        } = exact_lbr(tree, game, case.lbr.as_ref(), variant, 0).unwrap();
        eprintln!(
            "  lbr-{variant}: {:.3} / {:.3} chips as P0 / P1 (mean {:.0} mbb/hand; \
             BR - LBR {:.3} / {:.3}; {:?} decisions, {:.1} s)",
            seat_values[0],
            seat_values[1],
            500.0 * (seat_values[0] + seat_values[1]) / big_blind,
            br[0] - seat_values[0],
            br[1] - seat_values[1],
            decisions,
            t.elapsed().as_secs_f64()
        );
        for seat in 0..2 {
            assert!(
                seat_values[seat] <= br[seat] + 1e-9,
                "{} lbr-{variant} seat {seat}: LBR {} above the best response {}",
                case.name,
                seat_values[seat],
                br[seat]
            );
            assert!(decisions[seat] > 0, "{} lbr-{variant}", case.name);
            best_lbr[seat] = best_lbr[seat].max(seat_values[seat]);
        }
        standard.push((variant, seat_values));
    }
    // The sharp rule (raises valued against the hands that call or re-raise) is a pure
    // strategy too: never above the best response either.
    for &(variant, plain) in standard.iter().filter(|(v, _)| v.raises()) {
        let sharp = exact_lbr_with_rule(tree, game, case.lbr.as_ref(), variant, LbrRule::Sharp, 0)
            .unwrap()
            .seat_values;
        let gain = (sharp[0] + sharp[1] - plain[0] - plain[1]) / 2.0;
        eprintln!(
            "  sharp lbr-{variant}: {:.3} / {:.3} chips as P0 / P1 (mean {:.0} mbb/hand; \
             BR - sharp {:.3} / {:.3}; sharp - standard {gain:.3} chips/hand)",
            sharp[0],
            sharp[1],
            500.0 * (sharp[0] + sharp[1]) / big_blind,
            br[0] - sharp[0],
            br[1] - sharp[1],
        );
        for seat in 0..2 {
            assert!(
                sharp[seat] <= br[seat] + 1e-9,
                "{} sharp lbr-{variant} seat {seat}: {} above the best response {}",
                case.name,
                sharp[seat],
                br[seat]
            );
            best_lbr[seat] = best_lbr[seat].max(sharp[seat]);
        }
        // A policy that never folds nor raises calls with its whole range: the two rules
        // value every raise alike.
        if case.name == "always-call" {
            for seat in 0..2 {
                assert!(
                    (sharp[seat] - plain[seat]).abs() < 1e-6,
                    "always-call lbr-{variant} seat {seat}: sharp {} vs standard {}",
                    sharp[seat],
                    plain[seat]
                );
            }
        }
        if gain > sharpest.0 {
            sharpest = (gain, format!("{} lbr-{variant}", case.name));
        }
    }
    // LBR is an exploiter, not a bystander: against the policies far from equilibrium
    // its best variant wins more in each seat than the policy does against itself.
    if !case.name.contains("150 iterations") || case.name.contains("perturbed") {
        for seat in 0..2 {
            assert!(
                best_lbr[seat] > on[seat] + 1.0,
                "{} seat {seat}: LBR's best {} vs on-policy {}",
                case.name,
                best_lbr[seat],
                on[seat]
            );
        }
    }
    sharpest
}

/// Student of Games on the small game: continual re-solving (CFR+ on each betting round, as
/// the shipped model plays), with a value network at the flop deal. No network is trained
/// for this game, so it is an untrained CVPN of the right shape: the pre-flop searches see
/// arbitrary leaf values (the all-in leaves are valued from the cards), the flop searches
/// solve to the end of the hand. Its policy is what a search makes of them, far from a pure
/// strategy.
fn sog_case(tree: &PublicTree, game: &UniversalPokerGame, iterations: usize) -> Case {
    use armac::game::Game;
    use armac::nn::cvpn::{Cvpn, CvpnConfig};
    use armac::rl::sog::holdem_policy::HoldemSearchPolicy;
    use armac::search::holdem::HoldemSearchConfig;
    let hands = 28; // 8 cards, 2 each
    let cfg = CvpnConfig {
        game: game.load_string(),
        input_size: game.public_state_tensor_size() + 2 * hands,
        private_states: hands,
        num_actions: game.num_distinct_actions(),
        hidden: 32,
        layers: 1,
    };
    let net = Cvpn::new(cfg, &burn::tensor::Device::flex(), 1e-3, 5).unwrap();
    let config = HoldemSearchConfig {
        iterations,
        ..HoldemSearchConfig::default()
    };
    let name =
        format!("student of games ({iterations} cfr+ iterations per search, untrained cvpn)");
    let policy =
        HoldemSearchPolicy::new(small_game(), Arc::new(net.snapshot()), config, name.clone())
            .unwrap();
    let mut case = from_policy(tree, game, policy);
    case.name = name;
    case
}

/// Chips per hand (5% of a big blind) the sharp rule must gain over the standard one against
/// at least one policy.
const SHARP_MARGIN: f64 = 5.0;

/// The hands LBR plays (either rule) average to its exact expected value (per seat, within 4 standard
/// errors), so [`exact_lbr`] values the strategy LBR actually plays.
#[test]
fn played_hands_average_to_the_exact_value() {
    let game = small_game();
    let tree = small_tree(&game);
    let few = cfr_plus(&tree, 3);
    let policies: Vec<Box<dyn RangePolicy>> = vec![
        Box::new(UniformPolicy),
        Box::new(PerHand(tabular(&tree, &few))),
    ];
    for policy in &policies {
        let runs = [
            (LbrVariant::Fc, LbrRule::Standard),
            (LbrVariant::Fcpa, LbrRule::Standard),
            (LbrVariant::Fcpa, LbrRule::Sharp),
        ];
        for (variant, rule) in runs {
            let exact =
                exact_lbr_with_rule(&tree, &game, policy.as_ref(), variant, rule, 0).unwrap();
            let mut opts = LbrOptions::new(variant, 0);
            opts.seed = 3;
            opts.rule = rule;
            let deals = 3000;
            let values: Vec<[f64; 4]> = (0..deals)
                .map(|d| play_deal(&game, policy.as_ref(), &opts, d).unwrap())
                .collect();
            for seat in 0..2 {
                let xs: Vec<f64> = values
                    .iter()
                    .map(|v| (v[seat] + v[seat + 2]) / 2.0)
                    .collect();
                let n = xs.len() as f64;
                let mean = xs.iter().sum::<f64>() / n;
                let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
                let se = sd / n.sqrt();
                eprintln!(
                    "{} {rule} lbr-{variant} seat {seat}: played {mean:.3} ± {:.3} (1.96 se), \
                     exact {:.3}",
                    policy.name(),
                    1.96 * se,
                    exact.seat_values[seat]
                );
                assert!(
                    (mean - exact.seat_values[seat]).abs() <= 4.0 * se,
                    "{} {rule} lbr-{variant} seat {seat}: played {mean} ± {se}, exact {}",
                    policy.name(),
                    exact.seat_values[seat]
                );
            }
        }
    }
}

#[test]
fn run_lbr_plays_the_small_game() {
    let game = small_game();
    for variant in LbrVariant::ALL {
        check_game(game.config(), variant).unwrap();
        let mut opts = LbrOptions::new(variant, 4000);
        opts.seed = 9;
        let r = run_lbr(&game, &UniformPolicy, &opts, None).unwrap();
        assert_eq!(r.hands, 4000);
        // Against uniform every variant wins clearly.
        assert!(r.mean_mbb - r.ci95_mbb > 0.0, "{variant}: {r:?}");
    }
    // LBR-FC12-FCPA34 needs two rounds to split; one-round games are refused by name.
    let mut one_round = game.config().clone();
    one_round.num_rounds = 1;
    let e = check_game(&one_round, LbrVariant::Fc12Fcpa34).unwrap_err();
    assert!(e.to_string().contains("at least 2 betting rounds"), "{e}");
    assert!(check_game(&one_round, LbrVariant::Fcpa).is_ok());
}

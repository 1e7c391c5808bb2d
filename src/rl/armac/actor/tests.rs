use super::nets::legal_mask;
use super::shadow::{Shadow, shadows_after_action, shadows_after_chance};
use super::*;
use crate::game::{State, Turn};
use crate::games::load_game;
use crate::nn::armac::ActBatch;
use crate::nn::armac::ArmacNetConfig;
use crate::policy::probs::normalized_relu;
use crate::rl::armac::trajectory::Step;
use crate::util::SplitMix64;

/// Epoch 3's snapshots with `past` as the only (and previous) past epoch, the average
/// policy as the best candidate.
pub(super) fn one_past_epoch(past: PastEpoch) -> Snapshots {
    Snapshots {
        epoch: 3,
        latest: kuhn_ff(10),
        latest_table: None,
        past: vec![past.clone()],
        previous: Some(past),
        best: Candidate::Average,
    }
}

/// 64 learning episodes per group against the previous epoch, returns halved.
pub(super) fn latest_settings(target: AdvantageTarget, behaviour: Behaviour) -> ActorSettings {
    ActorSettings {
        games_per_group: 64,
        eval_fraction: 0.0,
        reward_scale: 2.0,
        past_draw: PastDraw::Latest,
        advantage_target: target,
        behaviour,
        chance_baseline: false,
        allin_runouts: 0,
    }
}

pub(super) fn kuhn_ff(seed: u64) -> Arc<ArmacPolicyNet> {
    small_ff("kuhn_poker", seed)
}

/// The past networks whose policy is the one an opponent decision played.
fn sources(step: &Step, nets: &[Arc<ArmacPolicyNet>]) -> std::collections::BTreeSet<usize> {
    let played = step.played_policy.as_ref().unwrap();
    let batch = ActBatch {
        own: step.info[step.player].clone(),
        both0: step.info[0].clone(),
        both1: step.info[1].clone(),
        legal: step.legal.iter().map(|&l| l as u8 as f32).collect(),
    };
    (0..nets.len())
        .filter(|&k| {
            let out = nets[k].evaluate(&batch);
            let pi = normalized_relu(&out.mean_regret, &step.legal);
            pi.iter().zip(played).all(|(a, b)| (a - b).abs() < 1e-6)
        })
        .collect()
}

/// The shadows at each learning decision are exactly the histories of the learning
/// player's infoset, weighted like `π_{-i}(h')` (chance and the opponent) in the game tree:
/// poker deals (Leduc), dice (Liar's Dice) and hidden opponent actions (II-Goofspiel).
#[test]
fn shadows_are_the_infosets_histories_with_opponent_reach() {
    use crate::tree::history::{HistoryKind, HistoryTree};
    use crate::tree::{PublicTree, uniform_tree_policy};
    for name in [
        "leduc_poker",
        "liars_dice",
        "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
    ] {
        let game = load_game(name).unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
        let uniform = uniform_tree_policy(&tree);
        let reach = [0, 1].map(|p| ht.opponent_reach(&tree, &uniform, p));
        let id = |st: &dyn State| -> usize {
            let mut h = 0;
            for &a in st.history() {
                h = ht.children(h).find(|&c| ht.action[c] == a).unwrap();
            }
            h
        };
        let size = game.information_state_tensor_size();
        let na = game.num_distinct_actions();
        let mut rng = SplitMix64::new(7);
        let mut checked = 0;
        for episode in 0..200 {
            let lp = episode % 2;
            let mut st = game.new_initial_state();
            let mut sh = vec![Shadow {
                state: st.clone_box(),
                weight: 1.0,
            }];
            loop {
                match st.turn() {
                    Turn::Terminal => break,
                    Turn::Chance => {
                        let o = st.chance_outcomes();
                        let w: Vec<f64> = o.iter().map(|x| x.1).collect();
                        st.apply_action(o[rng.weighted(&w)].0);
                        sh = shadows_after_chance(sh, st.as_ref(), lp, size).unwrap();
                    }
                    Turn::Player(p) => {
                        let legal = st.legal_actions();
                        let a = legal[rng.below(legal.len())];
                        if p == lp {
                            let h = id(st.as_ref());
                            let want: Vec<usize> = (0..ht.len())
                                .filter(|&x| {
                                    ht.kind[x] == HistoryKind::Decision(lp)
                                        && ht.infoset[x] == ht.infoset[h]
                                })
                                .collect();
                            let mut got: Vec<(usize, f64)> = sh
                                .iter()
                                .map(|x| (id(x.state.as_ref()), x.weight))
                                .collect();
                            got.sort_by_key(|x| x.0);
                            let ids: Vec<usize> = got.iter().map(|x| x.0).collect();
                            assert_eq!(ids, want, "{name}: histories of the infoset");
                            let (tw, tr): (f64, f64) = (
                                got.iter().map(|x| x.1).sum(),
                                want.iter().map(|&x| reach[lp][x]).sum(),
                            );
                            for &(x, w) in &got {
                                let r = reach[lp][x] / tr;
                                assert!((w / tw - r).abs() < 1e-9, "{name}: {w} vs {r}");
                            }
                            checked += 1;
                            for x in &mut sh {
                                x.state.apply_action(a);
                            }
                        } else {
                            let probs: Vec<Vec<f32>> = sh
                                .iter()
                                .map(|x| {
                                    let m = legal_mask(x.state.as_ref(), na);
                                    normalized_relu(&vec![0.0; na], &m)
                                })
                                .collect();
                            sh =
                                shadows_after_action(sh, &probs, st.as_ref(), a, lp, size).unwrap();
                        }
                        st.apply_action(a);
                    }
                }
            }
        }
        assert!(checked > 200, "{name}: {checked} decisions checked");
    }
}

/// `PastDraw::Episode` mixes past epochs within one lock-step group (Algorithm 1 draws `j`
/// per episode); `PastDraw::Latest` plays the previous epoch.
#[test]
fn past_epochs_are_drawn_per_episode_or_the_latest() {
    let game = load_game("kuhn_poker").unwrap();
    let policies = [kuhn_ff(101), kuhn_ff(202), kuhn_ff(303)];
    let snaps = Snapshots {
        epoch: 3,
        latest: kuhn_ff(10),
        latest_table: None,
        past: policies
            .iter()
            .map(|p| PastEpoch {
                policy: p.clone(),
                critic: kuhn_ff(20),
                exact: None,
                table: None,
            })
            .collect(),
        previous: Some(PastEpoch {
            policy: policies[1].clone(),
            critic: kuhn_ff(20),
            exact: None,
            table: None,
        }),
        best: Candidate::Uniform,
    };
    for (draw, want_distinct) in [(PastDraw::Episode, 3), (PastDraw::Latest, 1)] {
        let settings = ActorSettings {
            games_per_group: 48,
            eval_fraction: 0.0,
            reward_scale: 2.0,
            past_draw: draw,
            advantage_target: Default::default(),
            behaviour: Default::default(),
            chance_baseline: false,
            allin_runouts: 0,
        };
        let mut rng = SplitMix64::new(5);
        let (trajs, eval) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        assert!(eval.is_none());
        assert_eq!(trajs.len(), 48);
        let mut seen = std::collections::BTreeSet::new();
        for t in &trajs {
            assert!(t.learning);
            // The networks consistent with every opponent decision of the episode.
            let mut fits: std::collections::BTreeSet<usize> = (0..policies.len()).collect();
            for s in t.steps.iter().filter(|s| s.player != t.learning_player) {
                let here = sources(s, &policies);
                fits = fits.intersection(&here).copied().collect();
            }
            assert!(!fits.is_empty(), "one past epoch per episode");
            if fits.len() == 1 {
                seen.extend(fits);
            }
            for s in t.steps.iter().filter(|s| s.player == t.learning_player) {
                assert!(s.advantage.is_some() && s.played_policy.is_none());
            }
            // The learning player's behaviour reach starts at 1 and changes only after
            // its own decisions, by the probability of the action it took (positive).
            let mut reach = 1.0f32;
            for (k, s) in t.steps.iter().enumerate() {
                assert_eq!(s.reach, reach, "step {k}");
                if s.player == t.learning_player
                    && let Some(next) = t.steps.get(k + 1)
                {
                    assert!(next.reach > 0.0 && next.reach <= reach);
                    reach = next.reach;
                }
            }
        }
        assert_eq!(seen.len(), want_distinct, "{draw:?}: {seen:?}");
        if draw == PastDraw::Latest {
            assert!(seen.contains(&1), "the previous epoch plays: {seen:?}");
        }
    }
}

/// A Kuhn policy passing with probability `pass[p]` at every infoset of player `p`, as a
/// [`PolicyTable`] keyed by information-state tensors and as a [`TreePolicy`] of the
/// game's public tree.
pub(super) fn kuhn_table(
    game: &dyn crate::game::Game,
    pass: [f32; 2],
) -> (PolicyTable, crate::tree::TreePolicy) {
    let isz = game.information_state_tensor_size();
    let tree = crate::tree::PublicTree::build(game).unwrap();
    let mut table = PolicyTable::default();
    let mut tp: crate::tree::TreePolicy = [Vec::new(), Vec::new()];
    for p in 0..2 {
        let inf = &tree.infosets[p];
        tp[p] = vec![0.0; inf.offset[inf.len()] as usize];
        for i in 0..inf.len() {
            let st = crate::game::replay(game, &inf.history[i]).unwrap();
            let mut own = vec![0.0; isz];
            st.information_state_tensor(p, &mut own);
            table.insert(p, &own, vec![pass[p], 1.0 - pass[p]]);
            let o = inf.offset[i] as usize;
            tp[p][o] = f64::from(pass[p]);
            tp[p][o + 1] = 1.0 - f64::from(pass[p]);
        }
    }
    (table, tp)
}

/// The `tabular_w` ablation: with a table attached, the opponent plays the previous
/// epoch's table (not its network's head), the stored average-policy targets are that
/// table's policy, and the advantages' baseline `v_j` weighs the past critic's `q` by it.
#[test]
fn tables_replace_the_mean_regret_head_of_their_epoch() {
    let game = load_game("kuhn_poker").unwrap();
    let na = game.num_distinct_actions();
    // A table over every Kuhn infoset: pass with 0.2 or 0.9 depending on the player.
    let (table, _) = kuhn_table(game.as_ref(), [0.2, 0.9]);
    assert_eq!(table.len(), 12);
    let table = Arc::new(table);
    let critic = kuhn_ff(20);
    let past = PastEpoch {
        policy: kuhn_ff(101),
        critic: critic.clone(),
        exact: None,
        table: Some(table.clone()),
    };
    let snaps = one_past_epoch(past);
    let settings = latest_settings(AdvantageTarget::History, Behaviour::Uniform);
    let mut rng = SplitMix64::new(9);
    let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
    let (mut opp, mut own) = (0, 0);
    for t in &trajs {
        for s in &t.steps {
            if s.player != t.learning_player {
                let pass = if s.player == 0 { 0.2 } else { 0.9 };
                assert_eq!(s.played_policy.as_deref(), Some(&[pass, 1.0 - pass][..]));
                opp += 1;
            } else {
                // r = q − Σ_a π^j(a) q(a) with the table's π^j and the past critic's q.
                let out = critic.evaluate(&ActBatch {
                    own: s.info[s.player].clone(),
                    both0: s.info[0].clone(),
                    both1: s.info[1].clone(),
                    legal: vec![1.0; na],
                });
                let q = if s.player == 0 { &out.q0 } else { &out.q1 };
                let pass = if s.player == 0 { 0.2 } else { 0.9 };
                let v = pass * q[0] + (1.0 - pass) * q[1];
                let adv = s.advantage.as_ref().unwrap();
                for a in 0..na {
                    assert!((adv[a] - (q[a] - v)).abs() < 1e-5, "{adv:?} {q:?}");
                }
                own += 1;
            }
        }
    }
    assert!(
        opp > 40 && own > 40,
        "{opp} opponent and {own} own decisions"
    );
}

/// `Behaviour::Uniform`: in learning episodes the learning player's reach is the product of
/// `1 / |legal|` over its decisions (the candidates of the networks give other reaches);
/// the stored targets stay finite with either advantage target.
#[test]
fn uniform_behaviour_plays_uniformly_and_infoset_targets_are_advantages() {
    let game = load_game("kuhn_poker").unwrap();
    let past = PastEpoch {
        policy: kuhn_ff(101),
        critic: kuhn_ff(20),
        exact: None,
        table: None,
    };
    let snaps = one_past_epoch(past);
    for (behaviour, target) in [
        (Behaviour::Uniform, AdvantageTarget::History),
        (Behaviour::Candidates, AdvantageTarget::Infoset),
    ] {
        let settings = latest_settings(target, behaviour);
        let mut rng = SplitMix64::new(3);
        let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        // Steps whose recorded reach differs from the uniform policy's.
        let mut non_uniform = 0;
        for t in &trajs {
            let mut uniform = 1.0f32;
            for s in &t.steps {
                non_uniform += usize::from((s.reach - uniform).abs() > 1e-6);
                if s.player == t.learning_player {
                    let adv = s.advantage.as_ref().expect("learning decision");
                    assert!(adv.iter().all(|x| x.is_finite()), "{adv:?}");
                    uniform /= s.legal.iter().filter(|&&l| l).count() as f32;
                }
            }
        }
        if behaviour == Behaviour::Uniform {
            assert_eq!(non_uniform, 0, "uniform behaviour");
        } else {
            assert!(non_uniform > 0, "the candidates are not all uniform");
        }
    }
}

/// A feed-forward net for `game` with small random weights.
pub(super) fn small_ff(game: &str, seed: u64) -> Arc<ArmacPolicyNet> {
    let game = load_game(game).unwrap();
    let cfg = ArmacNetConfig::new(
        game.information_state_tensor_size(),
        game.num_distinct_actions(),
    )
    .with_encoder_hidden(32)
    .with_head_hidden(32)
    .with_zero_init_heads(false);
    Arc::new(ArmacPolicyNet::init(cfg, seed).unwrap())
}

/// [`play_group`] computes only the outputs its games read; it plays the same episodes
/// (targets, policies, candidate returns) as the reference that computes every output of
/// every network, for feed-forward and recurrent networks, every behaviour, past draw and
/// advantage target, with evaluation groups.
#[test]
fn selected_heads_play_the_same_episodes() {
    let recurrent = |game: &str, seed: u64| {
        let g = load_game(game).unwrap();
        let cfg = ArmacNetConfig::new(g.observation_tensor_size(), g.num_distinct_actions())
            .with_encoder_hidden(16)
            .with_head_hidden(16)
            .with_recurrent(true)
            .with_zero_init_heads(false);
        Arc::new(ArmacPolicyNet::init(cfg, seed).unwrap())
    };
    let mut compared = 0;
    for game in ["kuhn_poker", "leduc_poker", "liars_dice"] {
        let g = load_game(game).unwrap();
        for rec in [false, true] {
            let net = |seed: u64| {
                if rec {
                    recurrent(game, seed)
                } else {
                    small_ff(game, seed)
                }
            };
            let past: Vec<PastEpoch> = (0..3)
                .map(|i| PastEpoch {
                    policy: net(100 + i),
                    critic: net(200 + i),
                    exact: None,
                    table: None,
                })
                .collect();
            let snaps = Snapshots {
                epoch: 3,
                latest: net(7),
                latest_table: None,
                past: past.clone(),
                previous: Some(past[2].clone()),
                best: Candidate::all()[2],
            };
            let mut targets = vec![AdvantageTarget::History, AdvantageTarget::Corrected];
            if !rec {
                targets.push(AdvantageTarget::Infoset);
                targets.push(AdvantageTarget::CorrectedInfoset);
            }
            for draw in [PastDraw::Episode] {
                for behaviour in [Behaviour::Candidates, Behaviour::Uniform] {
                    for &target in &targets {
                        for eval_fraction in [0.0, 1.0] {
                            let settings = ActorSettings {
                                games_per_group: 12,
                                eval_fraction,
                                reward_scale: 2.0,
                                past_draw: draw,
                                advantage_target: target,
                                behaviour,
                                chance_baseline: !rec && target.is_corrected(),
                                allin_runouts: 0,
                            };
                            let ctx = format!("{game} rec={rec} {settings:?}");
                            let play = |all: bool| {
                                let mut rng = SplitMix64::new(9);
                                let f = if all {
                                    play_group_all_heads
                                } else {
                                    play_group
                                };
                                format!(
                                    "{:?}",
                                    f(&g, &snaps, &settings, Candidate::all(), &mut rng)
                                )
                            };
                            assert_eq!(play(false), play(true), "{ctx}");
                            compared += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(compared, 3 * (16 + 8));
}

/// `armac.allin_runouts` on small_fcpa: where a player still acts there is no run-out mean;
/// once both players are all in pre-flop, the exact mean over the flops is zero-sum and
/// agrees with plain simulation of single run-outs, and the sampled mean (a limit below the
/// flop's 24 ordered deals) averages to the exact one.
#[test]
fn runout_returns_average_the_board_once_no_one_acts() {
    use super::chance::runout_returns;
    let game = load_game("small_fcpa").unwrap();
    let mut rng = SplitMix64::new(5);
    assert_eq!(
        runout_returns(game.new_initial_state().as_ref(), 1 << 16, &mut rng),
        None
    );
    let simulate = |s: &dyn State, rng: &mut SplitMix64| {
        let mut c = s.clone_box();
        while c.turn() == Turn::Chance {
            let o = c.chance_outcomes();
            let w: Vec<f64> = o.iter().map(|x| x.1).collect();
            c.apply_action(o[rng.weighted(&w)].0);
        }
        c.returns()[0]
    };
    let n = 20_000;
    // The first random hole-card deal whose run-outs do not all end alike.
    let (s, draws) = (0..100)
        .find_map(|_| {
            let mut s = game.new_initial_state();
            while s.turn() == Turn::Chance {
                let o = s.chance_outcomes();
                s.apply_action(o[rng.below(o.len())].0);
            }
            assert!(s.legal_actions().contains(&3), "all in is legal pre-flop");
            s.apply_action(3);
            s.apply_action(1);
            assert_eq!(
                s.turn(),
                Turn::Chance,
                "the flop comes after an all-in and a call"
            );
            let draws: Vec<f64> = (0..n).map(|_| simulate(s.as_ref(), &mut rng)).collect();
            (draws.iter().any(|&x| x != draws[0])).then_some((s, draws))
        })
        .expect("some deal has run-outs that differ");
    let exact = runout_returns(s.as_ref(), 24, &mut rng).unwrap();
    assert!((exact[0] + exact[1]).abs() < 1e-9, "{exact:?}");
    let mean = draws.iter().sum::<f64>() / n as f64;
    let sd = (draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    assert!(
        (mean - exact[0]).abs() < 4.0 * sd / (n as f64).sqrt() + 1e-9,
        "{mean} vs {exact:?}"
    );
    let sampled: Vec<f64> = (0..n / 2)
        .map(|_| runout_returns(s.as_ref(), 2, &mut rng).unwrap()[0])
        .collect();
    let smean = sampled.iter().sum::<f64>() / sampled.len() as f64;
    assert!((smean - exact[0]).abs() < 4.0 * sd / (sampled.len() as f64).sqrt() + 1e-9);
    let mut t = game.new_initial_state();
    while t.turn() == Turn::Chance {
        let o = t.chance_outcomes();
        t.apply_action(o[0].0);
    }
    t.apply_action(1);
    t.apply_action(1);
    assert_eq!(t.turn(), Turn::Chance, "the flop after a limp and a check");
    assert_eq!(runout_returns(t.as_ref(), 1 << 16, &mut rng), None);
}

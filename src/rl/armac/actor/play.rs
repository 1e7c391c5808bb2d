//! One lock-step group of episodes: the networks each episode plays with, chance moves and
//! finished episodes, and at every decision one batched forward pass per network over the
//! games that need it.

mod act;

use super::chance::{ChanceNode, ChanceSlot, chance_children, evaluate_chance, runout_returns};
use super::cv::{CvStep, corrected_advantages};
use super::nets::{Nets, evaluate_with_table, legal_mask};
use super::roles::{Roles, candidate_heads, draw_roles};
use super::shadow::{Shadow, ShadowQuery, evaluate_shadows, shadows_after_chance};
use super::{ActorSettings, AdvantageTarget, Snapshots};
use crate::game::{GameRef, State, Turn};
use crate::nn::armac::{ActBatch, ActOutput, Heads, RecurrentState, StepBatch};
use crate::rl::armac::candidates::Candidate;
use crate::rl::armac::trajectory::Trajectory;
use crate::util::SplitMix64;
use std::sync::Arc;

/// One episode of a group while it is played.
struct Live {
    state: Box<dyn State>,
    traj: Trajectory,
    roles: Roles,
    /// Recurrent nets: both seats' LSTM states of this game, per network it uses.
    rnn: Vec<(usize, [RecurrentState; 2])>,
    /// The learning player's behaviour reach so far ([`Step::reach`](crate::rl::armac::trajectory::Step::reach)).
    reach: f64,
    /// [`AdvantageTarget::Infoset`] in learning episodes: the histories the learning player
    /// cannot tell from this one (`None` otherwise, or once there are too many).
    shadows: Option<Vec<Shadow>>,
    /// [`AdvantageTarget::Corrected`] in learning episodes: every decision so far, for the
    /// correction computed once the episode ends (`None` otherwise).
    corrected: Option<Vec<CvStep>>,
    /// [`AdvantageTarget::CorrectedInfoset`]: per learning decision (step index), what its
    /// corrected target adds, `Σ_h' w(h') A_c(h') − A_c(h)`.
    offsets: Vec<(usize, Vec<f32>)>,
    /// A chance node just passed whose value the next decision's step records: the
    /// probability and state of each of its outcomes until they are evaluated, then the value.
    chance: Option<ChanceNode>,
}

/// Plays one lock-step group of episodes and returns them with, for evaluation groups, the
/// candidate and its summed return.
pub fn play_group(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    play_group_with(game, snaps, settings, candidates, rng, false)
}

/// [`play_group`] with every network computing all of its outputs (critic and three heads)
/// on the rows it evaluates at a decision, where [`play_group`] computes only the ones its
/// games read. The same episodes, at more cost: the reference that tests and
/// `armac-bench actor` compare [`play_group`] with.
pub fn play_group_all_heads(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    play_group_with(game, snaps, settings, candidates, rng, true)
}

fn play_group_with(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
    all_heads: bool,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    let mut group = Group::new(game, snaps, settings, candidates, rng, all_heads);
    while !group.live.is_empty() {
        group.chance_and_terminals(rng);
        group.evaluate_chance();
        if group.live.iter().any(|l| l.state.is_chance()) || group.live.is_empty() {
            continue;
        }
        // Every live game is at a decision.
        group.decide(rng);
    }
    group.finish()
}

/// What stays fixed while a group plays.
#[derive(Clone, Copy)]
struct Shape {
    num_actions: usize,
    /// Length of the tensors the networks read: per-step observations for recurrent nets,
    /// information states for feed-forward ones.
    info_size: usize,
    recurrent: bool,
    /// Whether the group ranks candidates instead of producing learning data.
    evaluation: bool,
    /// Every network computes all of its outputs ([`play_group_all_heads`]).
    all_heads: bool,
}

/// A lock-step group of episodes in play.
struct Group<'a> {
    game: &'a GameRef,
    settings: &'a ActorSettings,
    shape: Shape,
    /// The distinct networks of the group (the episodes' [`Roles`] index them).
    nets: Nets,
    /// The episodes still being played, and those that have ended.
    live: Vec<Live>,
    done: Vec<Trajectory>,
    /// The candidate of a group that shares one draw.
    candidate: Option<Candidate>,
}

/// The live games at a decision: the acting players, both seats' input tensors and the
/// legal actions, per game.
struct Observed {
    players: Vec<usize>,
    infos: Vec<[Vec<f32>; 2]>,
    legals: Vec<Vec<bool>>,
}

impl Observed {
    /// The legal-action masks of games `rows`, one row each, as 0/1.
    fn legal_rows(&self, rows: &[usize]) -> Vec<f32> {
        rows.iter()
            .flat_map(|&g| self.legals[g].iter().map(|&m| m as u8 as f32))
            .collect()
    }

    /// Seat `p`'s observations of games `rows`, one row each.
    fn seat_rows(&self, rows: &[usize], p: usize) -> Vec<f32> {
        rows.iter()
            .flat_map(|&g| self.infos[g][p].iter().copied())
            .collect()
    }

    /// The acting seats of games `rows`.
    fn acting(&self, rows: &[usize]) -> Vec<usize> {
        rows.iter().map(|&g| self.players[g]).collect()
    }
}

/// The networks' outputs at a decision.
struct Decision {
    /// Per network, the games it evaluated (in order; its output rows).
    rows_of: Vec<Vec<usize>>,
    outs: Vec<Option<ActOutput>>,
    /// Per game, the output holding its shadows' rows and the first of them.
    shadows: Vec<Option<(Arc<ActOutput>, usize)>>,
}

impl Decision {
    /// Output row of network `k` for game `g`.
    fn at(&self, k: usize, g: usize) -> (&ActOutput, usize) {
        let i = self.rows_of[k]
            .binary_search(&g)
            .expect("network evaluated this game");
        (self.outs[k].as_ref().expect("network evaluated"), i)
    }
}

impl<'a> Group<'a> {
    /// Draws the group's networks (once, or per episode) and starts its episodes.
    fn new(
        game: &'a GameRef,
        snaps: &Snapshots,
        settings: &'a ActorSettings,
        candidates: &[Candidate],
        rng: &mut SplitMix64,
        all_heads: bool,
    ) -> Self {
        let num_actions = game.num_distinct_actions();
        // Recurrent nets read per-step observation tensors, feed-forward ones information
        // states.
        let recurrent = snaps.latest.config().recurrent;
        debug_assert!(
            !recurrent || snaps.latest_table.is_none(),
            "tables replace feed-forward heads only"
        );
        let info_size = if recurrent {
            game.observation_tensor_size()
        } else {
            game.information_state_tensor_size()
        };
        let evaluation = rng.next_f64() < settings.eval_fraction;
        let shape = Shape {
            num_actions,
            info_size,
            recurrent,
            evaluation,
            all_heads,
        };
        let draw = |nets: &mut Nets, rng: &mut SplitMix64| {
            draw_roles(
                snaps,
                settings.past_draw,
                settings.behaviour,
                evaluation,
                candidates,
                nets,
                rng,
            )
        };
        let mut nets: Nets = Vec::new();
        let group_roles = evaluation.then(|| draw(&mut nets, rng));
        let live: Vec<Live> = (0..settings.games_per_group)
            .map(|g| {
                let roles = group_roles.clone().unwrap_or_else(|| draw(&mut nets, rng));
                new_episode(game, snaps.epoch, settings, recurrent, g, roles)
            })
            .collect();
        let mut group = Group {
            game,
            settings,
            shape,
            nets,
            live,
            done: Vec::new(),
            candidate: group_roles.map(|r| r.candidate),
        };
        if recurrent {
            group.start_recurrent();
        }
        group
    }

    /// Gives every game the initial LSTM states of each network it uses.
    fn start_recurrent(&mut self) {
        let zero: Vec<[RecurrentState; 2]> = self
            .nets
            .iter()
            .map(|n| n.0.initial_state(1).expect("recurrent net"))
            .collect();
        for l in &mut self.live {
            let r = &l.roles;
            for k in [Some(r.opp), Some(r.beh), r.critic].into_iter().flatten() {
                if !l.rnn.iter().any(|(j, _)| *j == k) {
                    l.rnn.push((k, zero[k].clone()));
                }
            }
        }
    }

    /// Plays one chance move in every game at a chance node, and moves every game that has
    /// ended to the finished trajectories (with `armac.allin_runouts`, also every game that
    /// no player acts in again, with its mean returns over the run-outs).
    fn chance_and_terminals(&mut self, rng: &mut SplitMix64) {
        let baseline = self.settings.chance_baseline && !self.shape.recurrent;
        let runouts = self.settings.allin_runouts;
        let mut k = 0;
        while k < self.live.len() {
            let ended = match self.live[k].state.turn() {
                Turn::Chance if runouts > 0 => {
                    runout_returns(self.live[k].state.as_ref(), runouts, rng)
                }
                Turn::Terminal => Some(self.live[k].state.returns()),
                _ => None,
            };
            if let Some(returns) = ended {
                let l = self.live.swap_remove(k);
                let t = l.finish(self.game, self.settings.reward_scale, returns);
                self.done.push(t);
                continue;
            }
            match self.live[k].state.turn() {
                Turn::Chance => self.live[k].chance_move(baseline, self.shape, rng),
                Turn::Player(_) => k += 1,
                Turn::Terminal => unreachable!("terminal games have ended"),
            }
        }
    }

    /// Values of the chance nodes that corrected episodes just passed.
    fn evaluate_chance(&mut self) {
        let mut slots: Vec<ChanceSlot> = self
            .live
            .iter_mut()
            .map(|l| ChanceSlot {
                node: &mut l.chance,
                opp: l.roles.opp,
                critic: l.roles.critic,
                learner: l.traj.learning_player,
            })
            .collect();
        let Shape {
            num_actions,
            info_size,
            ..
        } = self.shape;
        evaluate_chance(&mut slots, &self.nets, num_actions, info_size);
    }

    /// One decision in every live game: each network evaluates, in one batch, the games
    /// that need it (recurrent nets: every game that carries its state), then every game
    /// samples its action and records its step.
    fn decide(&mut self, rng: &mut SplitMix64) {
        let obs = self.observe();
        let (rows_of, heads_of) = self.plan_rows(&obs.players);
        let outs = self.evaluate_rows(&rows_of, &heads_of, &obs);
        let shadows = self.evaluate_shadows(&obs.players);
        let dec = Decision {
            rows_of,
            outs,
            shadows,
        };
        let shape = self.shape;
        let Observed {
            players,
            infos,
            legals,
        } = obs;
        for (g, (l, (info, legal))) in self
            .live
            .iter_mut()
            .zip(infos.into_iter().zip(legals))
            .enumerate()
        {
            shape.act(l, g, players[g], &dec, info, legal, rng);
        }
    }

    /// The acting player, both seats' input tensors and the legal actions of every game.
    fn observe(&self) -> Observed {
        let Shape {
            num_actions,
            info_size,
            recurrent,
            ..
        } = self.shape;
        let n = self.live.len();
        let mut obs = Observed {
            players: Vec::with_capacity(n),
            infos: Vec::with_capacity(n),
            legals: Vec::with_capacity(n),
        };
        for l in &self.live {
            let p = match l.state.turn() {
                Turn::Player(p) => p,
                _ => unreachable!("only decisions remain"),
            };
            let mut i0 = vec![0.0; info_size];
            let mut i1 = vec![0.0; info_size];
            if recurrent {
                l.state.observation_tensor(0, &mut i0);
                l.state.observation_tensor(1, &mut i1);
            } else {
                l.state.information_state_tensor(0, &mut i0);
                l.state.information_state_tensor(1, &mut i1);
            }
            obs.players.push(p);
            obs.infos.push([i0, i1]);
            obs.legals.push(legal_mask(l.state.as_ref(), num_actions));
        }
        obs
    }

    /// Rows of each network (the games it evaluates, in order), and the outputs each network
    /// computes for its rows (the union of what its games read in [`Shape::act`]).
    fn plan_rows(&self, players: &[usize]) -> (Vec<Vec<usize>>, Vec<Heads>) {
        let Shape {
            recurrent,
            evaluation,
            all_heads,
            ..
        } = self.shape;
        let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); self.nets.len()];
        let mut heads_of = vec![Heads::NONE; self.nets.len()];
        for (g, l) in self.live.iter().enumerate() {
            let r = &l.roles;
            let learner_turn = players[g] == l.traj.learning_player;
            // The critic's values (advantages, corrections) unless exact values replace them.
            let critic = r.critic.filter(|_| r.exact.is_none());
            let mut needed: Vec<(usize, Heads)> = if learner_turn {
                // The behaviour candidate, and `π^j` with the critic for the advantages.
                let mut v = vec![(r.beh, candidate_heads(r.candidate))];
                if let Some(c) = critic {
                    v.extend([(r.opp, Heads::MEAN_REGRET), (c, Heads::CRITIC)]);
                }
                v
            } else if evaluation {
                vec![(r.opp, Heads::AVG_POLICY)]
            } else {
                // `π^j`, and the past critic for the correction at the opponent's decisions.
                let mut v = vec![(r.opp, Heads::MEAN_REGRET)];
                if let (Some(c), true) = (critic, l.corrected.is_some()) {
                    v.push((c, Heads::CRITIC));
                }
                v
            };
            if recurrent {
                // Every network that carries this game's LSTM states advances them, whether
                // or not an output of it is read.
                needed.extend(l.rnn.iter().map(|(k, _)| (*k, Heads::NONE)));
            }
            for (k, h) in needed {
                if !h.any() && !recurrent && !all_heads {
                    continue;
                }
                heads_of[k] = heads_of[k].union(h);
                if rows_of[k].last() != Some(&g) {
                    rows_of[k].push(g);
                }
            }
        }
        (rows_of, heads_of)
    }

    /// Each network's outputs on its rows (`None` for a network without rows).
    fn evaluate_rows(
        &mut self,
        rows_of: &[Vec<usize>],
        heads_of: &[Heads],
        obs: &Observed,
    ) -> Vec<Option<ActOutput>> {
        let mut outs: Vec<Option<ActOutput>> = Vec::with_capacity(self.nets.len());
        for (k, rows) in rows_of.iter().enumerate() {
            if rows.is_empty() {
                outs.push(None);
                continue;
            }
            let heads = if self.shape.all_heads {
                Heads::ALL
            } else {
                heads_of[k]
            };
            let out = if self.shape.recurrent {
                self.step_recurrent(k, rows, heads, obs)
            } else {
                self.evaluate_feed_forward(k, rows, heads, obs)
            };
            outs.push(Some(out));
        }
        outs
    }

    /// Network `k`'s rows as a batch of `own`/`both` tensors with their legal actions.
    fn evaluate_feed_forward(
        &self,
        k: usize,
        rows: &[usize],
        heads: Heads,
        obs: &Observed,
    ) -> ActOutput {
        let acting = obs.acting(rows);
        let batch = ActBatch {
            own: rows
                .iter()
                .zip(&acting)
                .flat_map(|(&g, &p)| obs.infos[g][p].iter().copied())
                .collect(),
            both0: obs.seat_rows(rows, 0),
            both1: obs.seat_rows(rows, 1),
            legal: obs.legal_rows(rows),
        };
        evaluate_with_table(&self.nets, k, &batch, &acting, heads)
    }

    /// Recurrent network `k` advances both seats' LSTMs of its games by this decision's
    /// observations (chance outcomes since the last decision are part of them).
    fn step_recurrent(
        &mut self,
        k: usize,
        rows: &[usize],
        heads: Heads,
        obs: &Observed,
    ) -> ActOutput {
        let step = StepBatch {
            rows: rows.len(),
            obs0: obs.seat_rows(rows, 0),
            obs1: obs.seat_rows(rows, 1),
            acting_player: obs.acting(rows),
            legal: obs.legal_rows(rows),
        };
        let live = &mut self.live;
        let state_of = |g: usize| &live[g].rnn.iter().find(|(j, _)| *j == k).unwrap().1;
        let st: [RecurrentState; 2] =
            std::array::from_fn(|p| RecurrentState::stack(rows.iter().map(|&g| &state_of(g)[p])));
        let (out, next) = self.nets[k]
            .0
            .step_heads(&step, &st, heads)
            .expect("recurrent step batch");
        for (i, &g) in rows.iter().enumerate() {
            let e = live[g].rnn.iter_mut().find(|(j, _)| *j == k).unwrap();
            e.1 = [next[0].row(i), next[1].row(i)];
        }
        out
    }

    /// One batched forward pass per network over the shadows of the games that track them:
    /// the past critic where the learning player acts, `π^j` where the opponent does.
    fn evaluate_shadows(&self, players: &[usize]) -> Vec<Option<(Arc<ActOutput>, usize)>> {
        let queries: Vec<Option<ShadowQuery>> = self
            .live
            .iter()
            .enumerate()
            .map(|(g, l)| {
                let shadows = l.shadows.as_deref()?;
                let (net, heads) = if players[g] == l.traj.learning_player {
                    let critic = l.roles.critic.expect("shadows only in learning episodes");
                    (critic, Heads::CRITIC)
                } else {
                    (l.roles.opp, Heads::MEAN_REGRET)
                };
                Some(ShadowQuery {
                    shadows,
                    net,
                    heads,
                    player: players[g],
                })
            })
            .collect();
        let Shape {
            num_actions,
            info_size,
            ..
        } = self.shape;
        evaluate_shadows(&queries, &self.nets, num_actions, info_size)
    }

    /// The finished episodes and, for an evaluation group, its candidate and summed return.
    fn finish(self) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
        let eval = self.shape.evaluation.then(|| {
            let total: f64 = self
                .done
                .iter()
                .map(|t| t.returns[t.learning_player] as f64)
                .sum();
            (
                self.candidate.expect("evaluation groups share one draw"),
                total,
            )
        });
        (self.done, eval)
    }
}

/// Episode `g` of a group (learning player `g % 2`) at the initial state, playing `roles`.
fn new_episode(
    game: &GameRef,
    epoch: u64,
    settings: &ActorSettings,
    recurrent: bool,
    g: usize,
    roles: Roles,
) -> Live {
    let state = game.new_initial_state();
    let target: AdvantageTarget = settings.advantage_target;
    let shadows =
        (target.uses_infoset() && !recurrent && roles.critic.is_some() && roles.exact.is_none())
            .then(|| {
                vec![Shadow {
                    state: state.clone_box(),
                    weight: 1.0,
                }]
            });
    let corrected =
        (target.is_corrected() && roles.critic.is_some() && roles.exact.is_none()).then(Vec::new);
    Live {
        state,
        shadows,
        corrected,
        offsets: Vec::new(),
        traj: Trajectory {
            epoch,
            learning_player: g % 2,
            learning: roles.critic.is_some(),
            steps: Vec::new(),
            returns: [0.0; 2],
            chance_nodes: 0,
        },
        roles,
        rnn: Vec::new(),
        reach: 1.0,
        chance: None,
    }
}

impl Live {
    /// Samples and plays the chance outcome at this game's chance node; with a chance
    /// `baseline`, a corrected episode past its first decision first records the node's
    /// outcomes for [`Group::evaluate_chance`].
    fn chance_move(&mut self, baseline: bool, shape: Shape, rng: &mut SplitMix64) {
        if baseline && self.corrected.as_ref().is_some_and(|cv| !cv.is_empty()) {
            self.chance =
                chance_children(self.state.as_ref(), shape.num_actions).map(ChanceNode::Pending);
        }
        let outcomes = self.state.chance_outcomes();
        let w: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
        let a = outcomes[rng.weighted(&w)].0;
        self.state.apply_action(a);
        self.traj.chance_nodes += 1;
        if let Some(sh) = self.shadows.take() {
            let lp = self.traj.learning_player;
            self.shadows = shadows_after_chance(sh, self.state.as_ref(), lp, shape.info_size);
        }
    }

    /// The ended episode's trajectory with returns `r` (the terminal's, or the mean of its
    /// run-outs) divided by `reward_scale`, and with corrected targets the advantages of its
    /// learning decisions.
    fn finish(mut self, game: &GameRef, reward_scale: f64, r: [f64; 2]) -> Trajectory {
        let k = reward_scale;
        self.traj.returns = [(r[0] / k) as f32, (r[1] / k) as f32];
        if let Some(cv) = self.corrected.take() {
            let ret = self.traj.returns[self.traj.learning_player];
            let range = [game.min_utility() / k, game.max_utility() / k];
            let range = range.map(|x| x as f32);
            let width = range[1] - range[0];
            for (i, mut adv) in corrected_advantages(&cv, ret, range) {
                if let Some((_, off)) = self.offsets.iter().find(|(j, _)| *j == i) {
                    for (a, o) in adv.iter_mut().zip(off) {
                        *a = (*a + o).clamp(-width, width);
                    }
                }
                self.traj.steps[i].advantage = Some(adv);
            }
        }
        self.traj
    }
}

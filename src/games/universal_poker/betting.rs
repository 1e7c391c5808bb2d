//! The betting state machine of a heads-up ACPC hand: who acts, what is legal, how chips
//! move and when a round or the hand ends. Written from the ACPC rules that OpenSpiel's
//! `universal_poker` delegates to; a small `Copy` struct so that game states clone cheaply.

use super::config::{BettingType, Config, MAX_ROUND_ACTIONS};

/// One betting move in ACPC terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// Give up the hand.
    Fold,
    /// Check, or call the current bet (all-in when short).
    Call,
    /// Raise to the given total contribution (no-limit); the size is 0 in limit games.
    Raise(i32),
}

/// The betting part of a hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Betting {
    /// Chips each player has put in the pot.
    pub spent: [i32; 2],
    /// Largest contribution so far.
    pub max_spent: i32,
    /// Smallest legal no-limit raise-to.
    pub min_raise_to: i32,
    /// Who has folded.
    pub folded: [bool; 2],
    /// Current round.
    pub round: u8,
    /// The hand is over (fold, or betting closed for good).
    pub finished: bool,
    /// Actions taken in the current round.
    pub round_actions: u8,
    /// Raises made in the current round.
    pub round_raises: u8,
    /// Who acted last in the current round (valid when `round_actions > 0`).
    pub last_actor: u8,
    /// Players (not all-in) who have matched the current bet since the last raise, the
    /// raiser included: the round closes once this reaches the number of acting players.
    pub called: u8,
}

impl Betting {
    /// The start of a hand: blinds posted, round 0.
    pub fn new(cfg: &Config) -> Betting {
        let max_spent = cfg.blind[0].max(cfg.blind[1]);
        let min_raise_to = match cfg.betting {
            BettingType::NoLimit if max_spent > 0 => 2 * max_spent,
            BettingType::NoLimit => 1,
            BettingType::Limit => 0,
        };
        Betting {
            spent: cfg.blind,
            max_spent,
            min_raise_to,
            folded: [false; 2],
            round: 0,
            finished: false,
            round_actions: 0,
            round_raises: 0,
            last_actor: 0,
            called: 0,
        }
    }

    /// Whether `p` can still put chips in (not folded, not all-in).
    #[inline]
    fn can_act(&self, cfg: &Config, p: usize) -> bool {
        !self.folded[p] && self.spent[p] < cfg.stack[p]
    }

    /// Number of players who can still act.
    #[inline]
    pub fn num_acting(&self, cfg: &Config) -> u8 {
        self.can_act(cfg, 0) as u8 + self.can_act(cfg, 1) as u8
    }

    /// Number of players who folded.
    #[inline]
    pub fn num_folded(&self) -> u8 {
        self.folded[0] as u8 + self.folded[1] as u8
    }

    /// Total chips in the pot.
    #[inline]
    pub fn total_spent(&self) -> i32 {
        self.spent[0] + self.spent[1]
    }

    /// The player after `p` who can still act (ACPC skips folded and all-in players).
    #[inline]
    fn next_player(&self, cfg: &Config, p: usize) -> usize {
        let q = 1 - p;
        if self.can_act(cfg, q) { q } else { p }
    }

    /// The player to act (meaningful only while the hand is not finished).
    #[inline]
    pub fn current_player(&self, cfg: &Config) -> usize {
        if self.round_actions > 0 {
            self.next_player(cfg, self.last_actor as usize)
        } else {
            // The round's designated first player if able, else the other one.
            let first = cfg.first_player[self.round as usize] as usize;
            self.next_player(cfg, 1 - first)
        }
    }

    /// Whether `p`, the player to act, may fold: only when facing a bet and not all-in.
    #[inline]
    pub fn can_fold(&self, cfg: &Config, p: usize) -> bool {
        self.spent[p] != self.max_spent && self.spent[p] != cfg.stack[p]
    }

    /// The legal raise-to range `(min, max)` of `p`, the player to act, or `None` when
    /// raising is not allowed (round cap reached, nobody left to call, not enough chips).
    /// Limit games report `(0, 0)`.
    #[inline]
    pub fn raise_range(&self, cfg: &Config, p: usize) -> Option<(i32, i32)> {
        let round = self.round as usize;
        if self.round_raises >= cfg.max_raises[round] {
            return None;
        }
        if self.round_actions as usize + 2 > MAX_ROUND_ACTIONS {
            return None;
        }
        if self.num_acting(cfg) <= 1 {
            return None;
        }
        if cfg.betting == BettingType::Limit {
            return Some((0, 0));
        }
        let max = cfg.stack[p];
        let mut min = self.min_raise_to;
        if min > max {
            if self.max_spent >= max {
                return None;
            }
            min = max;
        }
        Some((min, max))
    }

    /// OpenSpiel's pot-sized raise for `p`, the player to act: raise to the current bet plus
    /// the pot after calling.
    #[inline]
    pub fn pot_raise_to(&self, p: usize) -> i32 {
        self.total_spent() + 2 * self.max_spent - self.spent[p]
    }

    /// Applies `mv` for the player to act (legality is the caller's business), then closes
    /// the round or the hand when betting is over.
    pub fn apply(&mut self, cfg: &Config, mv: Move) {
        let p = self.current_player(cfg);
        debug_assert!(!self.finished);
        self.round_actions += 1;
        self.last_actor = p as u8;
        match mv {
            Move::Fold => self.folded[p] = true,
            Move::Call => {
                self.spent[p] = self.max_spent.min(cfg.stack[p]);
                self.called += (self.spent[p] < cfg.stack[p]) as u8;
            }
            Move::Raise(size) => {
                match cfg.betting {
                    BettingType::NoLimit => {
                        debug_assert!(size > self.max_spent && size <= cfg.stack[p]);
                        // The next raise must be at least as large as this one.
                        let next_min = 2 * size - self.max_spent;
                        if next_min > self.min_raise_to {
                            self.min_raise_to = next_min;
                        }
                        self.max_spent = size;
                    }
                    BettingType::Limit => {
                        let round = self.round as usize;
                        self.max_spent = self
                            .max_spent
                            .saturating_add(cfg.raise_size[round])
                            .min(cfg.stack[p]);
                    }
                }
                self.spent[p] = self.max_spent;
                self.round_raises += 1;
                self.called = (self.spent[p] < cfg.stack[p]) as u8;
            }
        }
        if self.num_folded() >= 1 {
            self.finished = true;
            return;
        }
        let acting = self.num_acting(cfg);
        if self.called >= acting {
            if acting > 1 {
                if (self.round as usize) + 1 < cfg.num_rounds {
                    self.round += 1;
                    self.round_actions = 0;
                    self.round_raises = 0;
                    self.called = 0;
                    self.min_raise_to = cfg.big_blind.max(1) + self.max_spent;
                } else {
                    self.finished = true;
                }
            } else {
                // Nobody can bet any more: straight to the showdown.
                self.finished = true;
                self.round = (cfg.num_rounds - 1) as u8;
            }
        }
    }
}

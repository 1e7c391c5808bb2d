//! Whole LBR runs: options, results, paired ratios, deals and the parallel driver.

use super::DEFAULT_PREFLOP_SAMPLES;
use super::LbrError;
use super::LbrRule;
use super::LbrVariant;
use super::breakdown::{Breakdown, BreakdownRow, HandEnd, classify};
use super::decision::{HandCtx, play_hand};
use super::deck::{Deck, is_holdem};
use super::range::RangePolicy;
use crate::eval::Watch;
use crate::game::{Action, State};
use crate::games::cards::CardSet;
use crate::games::hand_eval::HandStateMachine;
use crate::games::universal_poker::Abstraction;
use crate::games::universal_poker::Config;
use crate::games::universal_poker::UniversalPokerGame;
use crate::util::SplitMix64;
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// Options of an LBR evaluation.
#[derive(Clone, Debug)]
pub struct LbrOptions {
    /// Which actions LBR may take.
    pub variant: LbrVariant,
    /// Number of hands (rounded up to a multiple of 4).
    pub hands: u64,
    /// Run seed; every deal's seed is derived from it.
    pub seed: u64,
    /// Worker threads; 0 = one per core.
    pub threads: usize,
    /// Sampled (hand, board) pairs per pre-flop equity.
    pub preflop_samples: usize,
    /// Fold the opponent's decisions into the range only when an LBR decision reads it (the
    /// default; see the module docs). `false` updates it at every opponent decision (the
    /// benchmark's peer): the same hands are played, with more range queries.
    pub defer_range_updates: bool,
    /// How LBR values its raises ([`LbrRule::Standard`], Lisý & Bowling's, by default).
    pub rule: LbrRule,
    /// Keep each deal's mean in [`LbrResult::deal_means`] (8 bytes a deal), which
    /// [`paired_ratio`] needs; otherwise a run keeps running sums only, whatever its number
    /// of hands.
    pub keep_deal_means: bool,
}

impl LbrOptions {
    /// Defaults: [`DEFAULT_PREFLOP_SAMPLES`] pre-flop samples, seed 0, all cores.
    pub fn new(variant: LbrVariant, hands: u64) -> LbrOptions {
        LbrOptions {
            variant,
            hands,
            seed: 0,
            threads: 0,
            preflop_samples: DEFAULT_PREFLOP_SAMPLES,
            defer_range_updates: true,
            rule: LbrRule::Standard,
            keep_deal_means: false,
        }
    }
}

/// The outcome of [`run_lbr`]: LBR's winnings against the policy, averaged over both seats.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LbrResult {
    /// The LBR variant.
    pub variant: String,
    /// How LBR valued its raises: absent from the JSON for the standard rule, `sharp`
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The policy's name.
    pub policy: String,
    /// Hands played (a multiple of 4).
    pub hands: u64,
    /// Whether the run was stopped (Ctrl-C) before all its hands: the figures then cover the
    /// `hands` played. Absent from JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Mean winnings of LBR in chips per hand.
    pub mean_chips: f64,
    /// Half-width of the 95% confidence interval of `mean_chips` (NaN with a single deal).
    pub ci95_chips: f64,
    /// Mean winnings in milli-big-blinds per hand.
    pub mean_mbb: f64,
    /// Half-width of the 95% confidence interval in mbb per hand.
    pub ci95_mbb: f64,
    /// Mean winnings in chips per hand with LBR as player 0 and as player 1.
    pub seat_mean_chips: [f64; 2],
    /// Wall-clock seconds, including building the hand-evaluation tables if this is their
    /// first use in the process (about a second).
    pub seconds: f64,
    /// The run seed.
    pub seed: u64,
    /// LBR's mean winnings in chips over the four hands of each deal, in deal order (deal `d`
    /// is the same cards for every policy evaluated with the same seed); empty unless
    /// [`LbrOptions::keep_deal_means`].
    #[serde(skip)]
    pub deal_means: Vec<f64>,
    /// Where LBR's winnings come from: its hands by how they ended (see
    /// `super::breakdown`), largest share first.
    #[serde(skip)]
    pub breakdown: Vec<BreakdownRow>,
}

/// LBR against one policy relative to LBR against a reference policy on the same deals (see
/// [`paired_ratio`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LbrRatio {
    /// `mean(policy) / mean(reference)`.
    pub ratio: f64,
    /// Half-width of its 95% confidence interval (delta method over the paired deals).
    pub ci95: f64,
}

/// The ratio of two LBR results obtained with the same variant, seed and number of hands, so
/// that deal `d` holds the same cards in both, with a 95% confidence interval that uses the
/// pairing: with `x_d`, `y_d` the per-deal means against the policy and the reference and
/// `r = x̄ / ȳ`, the delta method gives `se(r) = sd(x_d − r y_d) / (sqrt(n) |ȳ|)`. Deals that
/// are good for LBR against one policy tend to be good against the other, so this interval is
/// narrower than one built from the two results' own intervals (NaN with a single deal).
/// `None` when the two results do not pair up (other seed, variant or deals) or the
/// reference's mean is 0.
pub fn paired_ratio(result: &LbrResult, reference: &LbrResult) -> Option<LbrRatio> {
    let (x, y) = (&result.deal_means, &reference.deal_means);
    if result.seed != reference.seed
        || result.partial
        || reference.partial
        || result.variant != reference.variant
        || x.len() != y.len()
        || x.is_empty()
    {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    if my == 0.0 {
        return None;
    }
    let ratio = mx / my;
    let var = x
        .iter()
        .zip(y)
        .map(|(a, b)| (a - ratio * b).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    Some(LbrRatio {
        ratio,
        ci95: if x.len() > 1 {
            1.96 * var.sqrt() / (n.sqrt() * my.abs())
        } else {
            f64::NAN
        },
    })
}

/// Checks that LBR can play `game` with `variant`: a heads-up `universal_poker` game with
/// two hole cards and the `fc` or `fcpa` abstraction (raising variants need `fcpa`;
/// LBR-FC12-FCPA34 needs at least two rounds).
pub fn check_game(cfg: &Config, variant: LbrVariant) -> Result<(), LbrError> {
    let game = &cfg.load_string;
    if cfg.num_hole != 2 {
        return Err(LbrError::UnsupportedGame(format!(
            "{game} deals {} hole cards",
            cfg.num_hole
        )));
    }
    if variant == LbrVariant::Fc12Fcpa34 && cfg.num_rounds < 2 {
        return Err(LbrError::UnsupportedGame(format!(
            "variant lbr-{variant} needs at least 2 betting rounds, {game} has {}",
            cfg.num_rounds
        )));
    }
    match cfg.abstraction {
        Abstraction::Fcpa => Ok(()),
        Abstraction::Fc if !variant.raises() => Ok(()),
        Abstraction::Fc => Err(LbrError::UnsupportedGame(format!(
            "variant lbr-{variant} raises, but {game} has only fold and call"
        ))),
        Abstraction::FullGame => Err(LbrError::UnsupportedGame(format!(
            "{game} uses the fullgame abstraction"
        ))),
    }
}

/// A seed derived from `parts` (SplitMix64 chained over the parts).
pub(super) fn derive_seed(parts: &[u64]) -> u64 {
    parts.iter().fold(0x243F_6A88_85A3_08D3u64, |acc, &p| {
        SplitMix64::new(acc ^ p.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64()
    })
}

/// The cards of one deal: `deck.cards_per_hand()` distinct cards drawn uniformly from the
/// deck, two hole pairs and then the board (nine for Hold'em).
pub(super) fn deal_cards(deck: &Deck, rng: &mut SplitMix64) -> Vec<u8> {
    let mut used = CardSet::EMPTY;
    (0..deck.cards_per_hand())
        .map(|_| {
            loop {
                let c = deck.cards[rng.below(deck.cards.len())];
                if !used.contains(c) {
                    used.insert(c);
                    break c;
                }
            }
        })
        .collect()
}

/// Plays deal `deal` of a run (four hands, see the module docs); returns LBR's winnings in
/// chips of the hands (LBR as P0, LBR as P1) with cards as dealt, then the same with the two
/// hole pairs swapped.
pub fn play_deal(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    deal: u64,
) -> Result<[f64; 4], LbrError> {
    Ok(play_deal_ends(game, policy, opts, deal, false)?.map(|(v, _, _)| v))
}

/// One hand LBR played, as [`run_lbr_hands`] returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct LbrHand {
    /// LBR's seat (OpenSpiel's player number).
    pub lbr_seat: usize,
    /// The whole history, chance outcomes included.
    pub history: Vec<Action>,
}

/// What one deal's hands give a run: LBR's winnings, how each hand ended and, when asked
/// for, its history.
type DealHands = [(f64, HandEnd, Option<Vec<Action>>); 4];

/// [`play_deal`], with how each hand ended (and its history with `keep`).
fn play_deal_ends(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    deal: u64,
    keep: bool,
) -> Result<DealHands, LbrError> {
    let deck = Deck::new(game.config());
    let ctx = HandCtx {
        policy,
        deck: &deck,
        variant: opts.variant,
        preflop_samples: opts.preflop_samples,
        defer: opts.defer_range_updates,
        rule: opts.rule,
    };
    let mut rng = SplitMix64::new(derive_seed(&[opts.seed, deal]));
    let cards = deal_cards(&deck, &mut rng);
    let mut swapped = cards.clone();
    swapped[..2].copy_from_slice(&cards[2..4]);
    swapped[2..4].copy_from_slice(&cards[..2]);
    let mut out = Vec::with_capacity(4);
    for k in 0..4 {
        let dealt = if k < 2 { &cards } else { &swapped };
        let mut hand_rng = SplitMix64::new(derive_seed(&[opts.seed, deal, k as u64 + 1]));
        let end = play_hand(&ctx, game, k % 2, dealt, &mut hand_rng)?;
        let history = keep.then(|| end.history().to_vec());
        out.push((end.returns()[k % 2], classify(game, &end, k % 2), history));
    }
    let [a, b, c, d]: DealHands = out.try_into().expect("four hands per deal");
    Ok([a, b, c, d])
}

/// Deals played between two looks at the stop flag's effect (a chunk of the parallel loop).
const LBR_CHUNK: u64 = 4096;

/// Bytes a run keeps per deal with [`LbrOptions::keep_deal_means`] (its mean).
pub const DEAL_MEAN_BYTES: u64 = 8;

/// Running sums over the deals of a run, in deal order: what its result needs, in constant
/// memory.
#[derive(Default)]
struct DealSums {
    deals: u64,
    /// The sum of the deals' means, and of LBR's winnings in each seat (both card
    /// assignments).
    total: f64,
    seat: [f64; 2],
    /// The first deal's mean, and the sums of the others' differences from it and of their
    /// squares (a shifted variance, exact for deals of equal value).
    shift: f64,
    diff: f64,
    diff2: f64,
}

impl DealSums {
    fn add(&mut self, v: &[f64; 4]) {
        let mean = v.iter().sum::<f64>() / 4.0;
        if self.deals == 0 {
            self.shift = mean;
        }
        self.deals += 1;
        self.total += mean;
        self.seat[0] += v[0] + v[2];
        self.seat[1] += v[1] + v[3];
        let d = mean - self.shift;
        self.diff += d;
        self.diff2 += d * d;
    }

    /// The sample variance of the deals' means (NaN with one deal).
    fn variance(&self) -> f64 {
        let n = self.deals as f64;
        if self.deals < 2 {
            return f64::NAN;
        }
        ((self.diff2 - self.diff * self.diff / n) / (n - 1.0)).max(0.0)
    }
}

/// Runs LBR against `policy` on `game` (see the module docs). `progress`, if given, is called
/// with the number of hands just finished (from worker threads).
pub fn run_lbr(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<LbrResult, LbrError> {
    let watch = Watch {
        progress,
        stop: None,
    };
    Ok(run_lbr_watched(game, policy, opts, watch, false)?.0)
}

/// [`run_lbr`], also returning every hand in play order: deal `d`'s four hands (LBR as
/// player 0 and as player 1 with the cards as dealt, then both with the hole pairs swapped).
pub fn run_lbr_hands(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<(LbrResult, Vec<LbrHand>), LbrError> {
    let watch = Watch {
        progress,
        stop: None,
    };
    run_lbr_watched(game, policy, opts, watch, true)
}

/// The run of [`run_lbr`] under `watch`, with the hands' histories when `keep`. Once
/// `watch.stop` is set no new deal starts: the result covers the deals finished (in deal
/// order, `partial` set), or is [`LbrError::Stopped`] when none was.
pub fn run_lbr_watched(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    watch: Watch<'_>,
    keep: bool,
) -> Result<(LbrResult, Vec<LbrHand>), LbrError> {
    check_game(game.config(), opts.variant)?;
    crate::util::check::hands("the number of hands", opts.hands).map_err(LbrError::Options)?;
    let start = Instant::now();
    // The hand-evaluation tables' first build (seconds) ends early on a stop.
    if is_holdem(game.config()) && HandStateMachine::get_or_stop(&|| watch.stopped()).is_none() {
        return Err(LbrError::Stopped);
    }
    let deals = opts.hands.div_ceil(4);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| LbrError::Options(format!("cannot start the thread pool: {e}")))?;
    // Deals are played in chunks, so that what is kept per deal is its four values (and the
    // hands when `keep`), and a stop ends the run within the deals in play.
    let mut partial = false;
    let mut sums = DealSums::default();
    let mut deal_means: Vec<f64> = Vec::new();
    let mut hands: Vec<LbrHand> = Vec::new();
    let mut breakdown = Breakdown::default();
    let mut first = 0;
    while first < deals && !partial {
        let last = deals.min(first + LBR_CHUNK);
        let chunk: Vec<Option<DealHands>> = pool.install(|| {
            (first..last)
                .into_par_iter()
                .map(|d| {
                    if watch.stopped() {
                        return Ok(None);
                    }
                    let v = play_deal_ends(game, policy, opts, d, keep)?;
                    watch.tick(4);
                    Ok(Some(v))
                })
                .collect::<Result<Vec<_>, LbrError>>()
        })?;
        for mut d in chunk.into_iter().flatten() {
            for &(chips, end, _) in &d {
                breakdown.add(end, chips);
            }
            let v = [d[0].0, d[1].0, d[2].0, d[3].0];
            sums.add(&v);
            if opts.keep_deal_means {
                deal_means.push(v.iter().sum::<f64>() / 4.0);
            }
            for (k, h) in d.iter_mut().enumerate() {
                if let Some(history) = h.2.take() {
                    hands.push(LbrHand {
                        lbr_seat: k % 2,
                        history,
                    });
                }
            }
        }
        partial = sums.deals != last;
        first = last;
    }
    if sums.deals == 0 {
        return Err(LbrError::Stopped);
    }
    let deals = sums.deals;
    let n = deals as f64;
    let mean = sums.total / n;
    let ci = 1.96 * sums.variance().sqrt() / n.sqrt();
    let seat = |s: usize| sums.seat[s] / (2.0 * n);
    let to_mbb = 1000.0 / game.config().big_blind as f64;
    let result = LbrResult {
        variant: opts.variant.name().to_string(),
        rule: (opts.rule != LbrRule::Standard).then(|| opts.rule.name().to_string()),
        policy: policy.name(),
        hands: 4 * deals,
        partial,
        mean_chips: mean,
        ci95_chips: ci,
        mean_mbb: mean * to_mbb,
        ci95_mbb: ci * to_mbb,
        seat_mean_chips: [seat(0), seat(1)],
        seconds: start.elapsed().as_secs_f64(),
        seed: opts.seed,
        deal_means,
        breakdown: breakdown.rows(game.config().num_rounds, game.config().big_blind as f64),
    };
    Ok((result, hands))
}

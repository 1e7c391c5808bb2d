//! Whole LBR runs: utilities, sums without deals, exact values against always-fold, paired
//! ratios, determinism across threads, refused games and policies, replayed decisions and the
//! breakdown of hands by how they ended.

use super::*;

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

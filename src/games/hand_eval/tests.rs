use super::*;
use crate::games::cards::CardSet;
use crate::games::cards::HOLE_CARDS;
use crate::games::cards::HOLE_MASKS;
use crate::games::cards::NUM_HOLE_HANDS;
use crate::games::cards::parse_cards;
use crate::util::SplitMix64;

fn ev(s: &str) -> u16 {
    evaluate(&parse_cards(s).unwrap())
}

#[test]
fn five_card_class_counts() {
    let mut counts = [0u64; 9];
    let mut seen = vec![false; NUM_HAND_RANKS as usize + 1];
    for a in 0..52u8 {
        for b in a + 1..52 {
            for c in b + 1..52 {
                for d in c + 1..52 {
                    for e in d + 1..52 {
                        let r = evaluate5(&[a, b, c, d, e]);
                        counts[category(r) as usize] += 1;
                        seen[r as usize] = true;
                    }
                }
            }
        }
    }
    assert_eq!(
        counts,
        [1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40]
    );
    assert!(!seen[0]);
    assert!(seen[1..].iter().all(|&s| s));
}

#[test]
fn known_hands() {
    assert_eq!(ev("7c5d4h3s2c"), 1);
    assert_eq!(ev("AsKsQsJsTs"), 7462);
    assert_eq!(category(ev("AsKsQsJsTs")), HandCategory::StraightFlush);
    // Wheel is the lowest straight, steel wheel the lowest straight flush.
    assert_eq!(ev("Ac2d3h4s5c"), HandCategory::Straight.min_rank());
    assert!(ev("Ac2d3h4s5c") < ev("2c3d4h5s6c"));
    assert_eq!(ev("Ah2h3h4h5h"), HandCategory::StraightFlush.min_rank());
    assert!(ev("Ah2h3h4h5h") > ev("AhKhQhJh9h"));
    assert_eq!(ev("AhKhQhJh9h"), HandCategory::Flush.max_rank());
    // Not a straight: K-A-2-3-4.
    assert_eq!(category(ev("Kc As 2d 3h 4s")), HandCategory::HighCard);
    // Kickers.
    assert!(ev("AcAd Kh Qs 9c") > ev("AhAs Kc Qd 8c"));
    assert_eq!(ev("AcAd Kh Qs 9c"), ev("AhAs Kc Qd 9d"));
    assert!(ev("KcKd 2h 2s Ac") > ev("KhKs 2c 2d Qc"));
    assert!(ev("7c7d7h As Kc") > ev("7c7d7h As Qc"));
    assert!(ev("2c2d2h3s3c") > ev("AcAdKhKsQc QdJs"));
    assert!(ev("3c3d3h2s2c") > ev("2c2d2h As Ac"));
    // Seven cards: best five; the sixth and seventh card do not play.
    assert_eq!(ev("AsKs 2c3d 4h 5s 9c"), ev("2c3d4h5sAd"));
    assert_eq!(ev("AcAd KcKd QcQd Jh"), ev("AcAdKcKdQh"));
    assert_eq!(category(ev("Ac Kc 9c 5c 2c 2d 2h")), HandCategory::Flush);
    assert_eq!(
        category(ev("2c 2d 2h 3c 3d 3h 9s")),
        HandCategory::FullHouse
    );
    for cat in HandCategory::ALL {
        assert_eq!(category(cat.min_rank()), cat);
        assert_eq!(category(cat.max_rank()), cat);
    }
}

fn random_cards<const N: usize>(rng: &mut SplitMix64) -> [u8; N] {
    let mut used = 0u64;
    let mut out = [0u8; N];
    for slot in out.iter_mut() {
        loop {
            let c = rng.below(52) as u8;
            if used >> c & 1 == 0 {
                used |= 1 << c;
                *slot = c;
                break;
            }
        }
    }
    out
}

#[test]
fn five_card_class_counts_reference() {
    let mut counts = [0u64; 9];
    for a in 0..52u8 {
        for b in a + 1..52 {
            for c in b + 1..52 {
                for d in c + 1..52 {
                    for e in d + 1..52 {
                        let r = evaluate_simple(&[a, b, c, d, e]);
                        counts[category(r) as usize] += 1;
                    }
                }
            }
        }
    }
    assert_eq!(
        counts,
        [1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40]
    );
}

#[test]
fn fast_matches_reference_on_random_hands() {
    let mut rng = SplitMix64::new(7);
    for _ in 0..300_000 {
        let h: [u8; 7] = random_cards(&mut rng);
        let r = evaluate7(&h);
        assert_eq!(r, evaluate_simple(&h), "{h:?}");
        assert_eq!(r, evaluate(&h));
        assert_eq!(r, HandKey::from_cards(&h).rank());
    }
    for _ in 0..50_000 {
        let h: [u8; 6] = random_cards(&mut rng);
        assert_eq!(evaluate6(&h), evaluate_simple(&h), "{h:?}");
        let h: [u8; 5] = random_cards(&mut rng);
        assert_eq!(evaluate5(&h), evaluate_simple(&h), "{h:?}");
    }
}

#[test]
fn state_machine_matches_fast_path() {
    let sm = HandStateMachine::get();
    let mut rng = SplitMix64::new(11);
    for _ in 0..200_000 {
        let h: [u8; 7] = random_cards(&mut rng);
        let mut s = HandStateMachine::ROOT;
        for &c in &h[..6] {
            s = sm.step(s, c);
        }
        assert_eq!(sm.rank7(s, h[6]), evaluate7(&h), "{h:?}");
    }
    assert_eq!(sm.states_per_level()[0], 1);
    assert_eq!(sm.states_per_level()[1], 52);
    assert_eq!(sm.states_per_level()[2], 1326);
}

fn brute_force_showdown(board: &[u8; 5], opp: &[f64]) -> Vec<f64> {
    let board_mask = CardSet::from_cards(board).0;
    let ranks: Vec<u16> = HOLE_CARDS
        .iter()
        .map(|&(a, b)| {
            let m = CardSet::from_cards(&[a, b]).0;
            if m & board_mask != 0 {
                0
            } else {
                let mut cards = [0u8; 7];
                cards[..5].copy_from_slice(board);
                cards[5] = a;
                cards[6] = b;
                evaluate_simple(&cards)
            }
        })
        .collect();
    (0..NUM_HOLE_HANDS)
        .map(|h| {
            if ranks[h] == 0 {
                return 0.0;
            }
            let mut v = 0.0;
            for o in 0..NUM_HOLE_HANDS {
                if ranks[o] == 0 || HOLE_MASKS[h] & HOLE_MASKS[o] != 0 {
                    continue;
                }
                v += opp[o] * (ranks[h].cmp(&ranks[o]) as i32 as f64);
            }
            v
        })
        .collect()
}

#[test]
fn showdown_values_match_brute_force() {
    let mut rng = SplitMix64::new(3);
    let mut boards: Vec<[u8; 5]> = (0..12).map(|_| random_cards(&mut rng)).collect();
    // Boards with many ties: a board straight flush, board quads, a board full house.
    boards.push([48, 44, 40, 36, 32].map(|c| c + 2)); // Ah Kh Qh Jh Th
    boards.push(parse_cards("7c7d7h7s2c").unwrap().try_into().unwrap());
    boards.push(parse_cards("7c7d7h2s2c").unwrap().try_into().unwrap());
    for (i, board) in boards.iter().enumerate() {
        let sd = BoardShowdown::new(board);
        assert_eq!(sd.order().len(), 1081);
        let opp: Vec<f64> = (0..NUM_HOLE_HANDS)
            .map(|h| {
                let x = rng.next_f64();
                // Some exact zeros, and (for odd boards) mass on colliding hands,
                // which must be ignored.
                if x < 0.2 || (i % 2 == 0 && HOLE_MASKS[h] & CardSet::from_cards(board).0 != 0) {
                    0.0
                } else {
                    x / 1000.0
                }
            })
            .collect();
        let fast = sd.values(&opp);
        let slow = brute_force_showdown(board, &opp);
        for h in 0..NUM_HOLE_HANDS {
            assert!(
                (fast[h] - slow[h]).abs() < 1e-9,
                "board {board:?} hand {h}: {} vs {}",
                fast[h],
                slow[h]
            );
        }
        assert_eq!(showdown_values(board, &opp), fast);
        let mass = sd.compatible_mass(&opp);
        for h in (0..NUM_HOLE_HANDS).step_by(37) {
            if sd.ranks()[h] == 0 {
                continue;
            }
            let m: f64 = (0..NUM_HOLE_HANDS)
                .filter(|&o| sd.ranks()[o] != 0 && HOLE_MASKS[o] & HOLE_MASKS[h] == 0)
                .map(|o| opp[o])
                .sum();
            assert!((mass[h] - m).abs() < 1e-9);
        }
    }
}

/// The known numbers of seven-card hands per category, by full enumeration; plus an
/// exhaustive check that the state machine and [`evaluate7`] agree on every hand.
/// Runs in release builds (`cargo test --release`).
#[test]
#[cfg_attr(debug_assertions, ignore)]
fn seven_card_category_counts() {
    assert_eq!(
        category_counts_7card(),
        [
            23_294_460, 58_627_800, 31_433_400, 6_461_620, 6_180_020, 4_047_644, 3_473_184,
            224_848, 41_584
        ]
    );
    let (hands, checksum) = bench_enumerate_all();
    assert_eq!(hands, NUM_SEVEN_CARD_HANDS);
    let hist = rank_histogram_7card();
    let sum: u64 = hist.iter().enumerate().map(|(r, &n)| r as u64 * n).sum();
    assert_eq!(sum, checksum);
    // Every 7-card hand: state machine == rank-key evaluator.
    let sm = HandStateMachine::get();
    let mut mismatches = 0u64;
    for c1 in 0..46u8 {
        let (s1, k1) = (sm.step(HandStateMachine::ROOT, c1), HandKey::EMPTY.with(c1));
        for c2 in c1 + 1..47 {
            let (s2, k2) = (sm.step(s1, c2), k1.with(c2));
            for c3 in c2 + 1..48 {
                let (s3, k3) = (sm.step(s2, c3), k2.with(c3));
                for c4 in c3 + 1..49 {
                    let (s4, k4) = (sm.step(s3, c4), k3.with(c4));
                    for c5 in c4 + 1..50 {
                        let (s5, k5) = (sm.step(s4, c5), k4.with(c5));
                        for c6 in c5 + 1..51 {
                            let (s6, k6) = (sm.step(s5, c6), k5.with(c6));
                            let row = sm.rank7_row(s6);
                            for c7 in c6 + 1..52 {
                                mismatches += (row[c7 as usize] != k6.with(c7).rank()) as u64;
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(mismatches, 0);
}

/// Prints timings; run with `cargo test --release --lib games::hand_eval -- --nocapture`.
#[test]
#[cfg_attr(debug_assertions, ignore)]
fn timings() {
    use std::time::Instant;
    let t = Instant::now();
    let _ = rank_tables();
    let t_tables = t.elapsed();
    let t = Instant::now();
    let sm = HandStateMachine::get();
    let t_machine = t.elapsed();
    println!(
        "tables: rank-key {:.3} s; state machine {:.3} s, {:.1} MB, states per level {:?}",
        t_tables.as_secs_f64(),
        t_machine.as_secs_f64(),
        sm.memory_bytes() as f64 / 1e6,
        sm.states_per_level()
    );
    let t = Instant::now();
    let (hands, checksum) = bench_enumerate_all();
    let dt = t.elapsed().as_secs_f64();
    println!(
        "enumerate all (sum of ranks): {hands} hands in {dt:.3} s = {:.0} M/s (checksum {checksum})",
        hands as f64 / dt / 1e6
    );
    let t = Instant::now();
    let counts = category_counts_7card();
    let dt = t.elapsed().as_secs_f64();
    println!(
        "enumerate all (rank histogram): {:.3} s = {:.0} M/s {counts:?}",
        dt,
        NUM_SEVEN_CARD_HANDS as f64 / dt / 1e6
    );
    let n = 50_000_000;
    let t = Instant::now();
    let pool = random_hands(1 << 20, 5);
    let t_pool = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let checksum = bench_random(n, 5);
    let dt = t.elapsed().as_secs_f64() - t_pool;
    println!(
        "random evaluate7: {n} hands in {dt:.3} s = {:.0} M/s (checksum {checksum})",
        n as f64 / dt / 1e6
    );
    let t = Instant::now();
    let mut s = 0u64;
    for h in &pool {
        s += evaluate_simple(h) as u64;
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "reference evaluator: {:.2} M/s ({s})",
        pool.len() as f64 / dt / 1e6
    );
    let boards: Vec<[u8; 5]> = (0..1000)
        .map(|i| pool[i][..5].try_into().unwrap())
        .collect();
    let opp = vec![1.0 / 1326.0; NUM_HOLE_HANDS];
    let mut out = vec![0.0; NUM_HOLE_HANDS];
    let t = Instant::now();
    for b in &boards {
        BoardShowdown::new(b).values_into(&opp, &mut out);
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "showdown (new board + values): {:.1} us each",
        dt / 1000.0 * 1e6
    );
    let sd = BoardShowdown::new(&boards[0]);
    let t = Instant::now();
    for _ in 0..10_000 {
        sd.values_into(&opp, &mut out);
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "showdown values on a prepared board: {:.2} us each",
        dt / 10_000.0 * 1e6
    );
}

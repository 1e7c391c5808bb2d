//! Showdown and fold sums of one board against a range, on the host: the terminal values of
//! factored poker solvers ([`crate::search::factored`]) and of the CVPN's targets. The
//! tensor version for the full deck is `nn::public::showdown::Showdown`.

/// The showdown sums on the host in `f64`, for any list of two-card hands (any deck whose card
/// ids are below 64) and any strengths: what factored solvers over small or abstract decks
/// ([`crate::tree::poker::PokerLayout`]) evaluate their terminals with, one range at a time.
///
/// Built once per board: the hands sharing no card with the board, sorted by strength, and
/// the starts of their tie groups. [`HandSweep::showdown_into`] walks the groups from the
/// weakest, keeping the range mass below the group overall and per card; the mass strictly
/// weaker than `x` and sharing no card with it is `below − below[a] − below[b]` (only `x`
/// holds both its cards, and `x` is not below itself), and the mass strictly stronger follows
/// from the totals the same way. `O(P log P)` to build, `O(P)` per range.
#[derive(Clone, Debug)]
pub struct HandSweep {
    hands: Vec<(u8, u8)>,
    /// Hands sharing no card with the board, weakest first.
    order: Vec<u32>,
    /// Start of each tie group in `order`, then `order.len()`.
    group_starts: Vec<u32>,
    possible: Vec<bool>,
}

impl HandSweep {
    /// The sweep of `hands` (card ids below 64) on a board given as card bits: hands sharing a
    /// card with it are impossible (value 0, range entries ignored). `strength[x]` (higher is
    /// stronger) orders showdowns; `None` makes every hand tie (enough for fold sums).
    ///
    /// # Panics
    /// If a card id is 64 or more, or `strength` has another length than `hands`.
    pub fn new(hands: &[(u8, u8)], board_mask: u64, strength: Option<&[u16]>) -> HandSweep {
        assert!(
            hands.iter().all(|&(a, b)| a < 64 && b < 64 && a != b),
            "hands are pairs of distinct card ids below 64"
        );
        if let Some(s) = strength {
            assert_eq!(s.len(), hands.len(), "one strength per hand");
        }
        let st = |h: u32| strength.map_or(0, |s| s[h as usize]);
        let possible: Vec<bool> = hands
            .iter()
            .map(|&(a, b)| board_mask & (1u64 << a | 1u64 << b) == 0)
            .collect();
        let mut order: Vec<u32> = (0..hands.len() as u32)
            .filter(|&h| possible[h as usize])
            .collect();
        order.sort_by_key(|&h| (st(h), h));
        let mut group_starts = Vec::new();
        for (i, &h) in order.iter().enumerate() {
            if i == 0 || st(order[i - 1]) != st(h) {
                group_starts.push(i as u32);
            }
        }
        group_starts.push(order.len() as u32);
        HandSweep {
            hands: hands.to_vec(),
            order,
            group_starts,
            possible,
        }
    }

    /// Whether hand `x` shares no card with the board.
    pub fn possible(&self, x: usize) -> bool {
        self.possible[x]
    }

    /// The opponent mass over possible hands, in total and per card it holds.
    fn totals(&self, opp_range: &[f64]) -> (f64, [f64; 64]) {
        let mut total = 0.0;
        let mut total_with = [0.0f64; 64];
        for &h in &self.order {
            let r = opp_range[h as usize];
            let (a, b) = self.hands[h as usize];
            total += r;
            total_with[a as usize] += r;
            total_with[b as usize] += r;
        }
        (total, total_with)
    }

    /// `out[x] = Σ_y r(y) · [x, y disjoint] · sign(strength(x) − strength(y))` over possible
    /// hands (0 for impossible `x`).
    pub fn showdown_into(&self, opp_range: &[f64], out: &mut [f64]) {
        let n = self.hands.len();
        assert!(
            opp_range.len() == n && out.len() == n,
            "ranges have one entry per hand"
        );
        out.fill(0.0);
        let (total, total_with) = self.totals(opp_range);
        let mut upto = 0.0;
        let mut upto_with = [0.0f64; 64];
        for g in self.group_starts.windows(2) {
            let group = &self.order[g[0] as usize..g[1] as usize];
            for &h in group {
                let (a, b) = self.hands[h as usize];
                out[h as usize] = upto - upto_with[a as usize] - upto_with[b as usize];
            }
            for &h in group {
                let r = opp_range[h as usize];
                let (a, b) = self.hands[h as usize];
                upto += r;
                upto_with[a as usize] += r;
                upto_with[b as usize] += r;
            }
            for &h in group {
                let (a, b) = self.hands[h as usize];
                let (a, b) = (a as usize, b as usize);
                let stronger = (total - upto)
                    - (total_with[a] - upto_with[a])
                    - (total_with[b] - upto_with[b]);
                out[h as usize] -= stronger;
            }
        }
    }

    /// [`HandSweep::showdown_into`] for `k` ranges at once, added to `acc`: `opp` and `acc`
    /// are hand-major (`[x · k + j]` is range `j`'s entry of hand `x`), and
    /// `acc[x·k + j] += Σ_y opp[y·k + j] · [x, y disjoint] · sign(strength(x) − strength(y))`
    /// over possible hands (impossible `x` get nothing). One walk of the board's order serves
    /// all `k` ranges; `scratch` is reused from call to call.
    ///
    /// # Panics
    /// If `opp` or `acc` does not hold `k` entries per hand.
    pub fn showdown_add_many(
        &self,
        opp: &[f64],
        k: usize,
        acc: &mut [f64],
        scratch: &mut Vec<f64>,
    ) {
        let n = self.hands.len();
        assert!(
            opp.len() == n * k && acc.len() == n * k,
            "ranges have k entries per hand"
        );
        scratch.clear();
        scratch.resize(130 * k, 0.0);
        let (total, rest) = scratch.split_at_mut(k);
        let (total_with, rest) = rest.split_at_mut(64 * k);
        let (upto, upto_with) = rest.split_at_mut(k);
        let add = |to: &mut [f64], r: &[f64]| to.iter_mut().zip(r).for_each(|(t, &v)| *t += v);
        for &h in &self.order {
            let h = h as usize;
            let r = &opp[h * k..(h + 1) * k];
            let (a, b) = self.hands[h];
            let (a, b) = (a as usize, b as usize);
            add(total, r);
            add(&mut total_with[a * k..(a + 1) * k], r);
            add(&mut total_with[b * k..(b + 1) * k], r);
        }
        for g in self.group_starts.windows(2) {
            let group = &self.order[g[0] as usize..g[1] as usize];
            // The mass strictly weaker than the group, disjoint from each hand.
            for &h in group {
                let h = h as usize;
                let (a, b) = self.hands[h];
                let (a, b) = (a as usize, b as usize);
                let (ua, ub) = (
                    &upto_with[a * k..(a + 1) * k],
                    &upto_with[b * k..(b + 1) * k],
                );
                let out = &mut acc[h * k..(h + 1) * k];
                for j in 0..k {
                    out[j] += upto[j] - ua[j] - ub[j];
                }
            }
            for &h in group {
                let h = h as usize;
                let r = &opp[h * k..(h + 1) * k];
                let (a, b) = self.hands[h];
                let (a, b) = (a as usize, b as usize);
                add(upto, r);
                add(&mut upto_with[a * k..(a + 1) * k], r);
                add(&mut upto_with[b * k..(b + 1) * k], r);
            }
            // The mass strictly stronger than the group.
            for &h in group {
                let h = h as usize;
                let (a, b) = self.hands[h];
                let (a, b) = (a as usize, b as usize);
                let (ua, ub) = (
                    &upto_with[a * k..(a + 1) * k],
                    &upto_with[b * k..(b + 1) * k],
                );
                let (ta, tb) = (
                    &total_with[a * k..(a + 1) * k],
                    &total_with[b * k..(b + 1) * k],
                );
                let out = &mut acc[h * k..(h + 1) * k];
                for j in 0..k {
                    out[j] -= (total[j] - upto[j]) - (ta[j] - ua[j]) - (tb[j] - ub[j]);
                }
            }
        }
    }

    /// `Σ_y r(y)` over the hands possible on the board: the scale of the sums the sweeps
    /// cancel (their rounding residue is a few ulps of it).
    pub fn mass(&self, opp_range: &[f64]) -> f64 {
        self.order.iter().map(|&h| opp_range[h as usize]).sum()
    }

    /// `out[x] = Σ_y r(y) · [x, y disjoint]` over possible hands (0 for impossible `x`): the
    /// opponent mass a fold terminal multiplies by the stake.
    pub fn fold_into(&self, opp_range: &[f64], out: &mut [f64]) {
        let n = self.hands.len();
        assert!(
            opp_range.len() == n && out.len() == n,
            "ranges have one entry per hand"
        );
        out.fill(0.0);
        let (total, total_with) = self.totals(opp_range);
        for &h in &self.order {
            let (a, b) = self.hands[h as usize];
            // `x` holds both its cards: subtracted twice, added back once.
            out[h as usize] =
                total - total_with[a as usize] - total_with[b as usize] + opp_range[h as usize];
        }
    }
}

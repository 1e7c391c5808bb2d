//! The scorecard's table ([`Scorecard::to_text`]).

use super::{Estimate, LbrRow, PolicyCard, SHARP_VARIANTS, Scorecard};
use crate::eval::lbr::{LbrRule, LbrVariant};
use crate::run::evaluate::breakdown_table;
use std::collections::BTreeMap;

/// `mean ± ci95` with no decimals (`± n/a` for an undefined interval); `signed` adds `+`.
fn interval(mean: f64, ci95: f64, signed: bool) -> String {
    let ci = if ci95.is_finite() {
        format!("{ci95:.0}")
    } else {
        "n/a".into()
    };
    if signed {
        format!("{mean:+.0} ± {ci}")
    } else {
        format!("{mean:.0} ± {ci}")
    }
}

/// Which of a column's LBR tables a row reads.
type Rows = fn(&PolicyCard) -> &BTreeMap<String, LbrRow>;

impl Scorecard {
    fn standard_rows(c: &PolicyCard) -> &BTreeMap<String, LbrRow> {
        &c.lbr
    }

    fn sharp_rows(c: &PolicyCard) -> &BTreeMap<String, LbrRow> {
        &c.lbr_sharp
    }

    /// The columns in display order (average, current, then the others).
    fn ordered(&self) -> Vec<(&String, &PolicyCard)> {
        let rank = |n: &str| match n {
            "average" => 0,
            "current" => 1,
            _ => 2,
        };
        let mut v: Vec<_> = self.policies.iter().collect();
        v.sort_by_key(|(n, _)| rank(n));
        v
    }

    /// The scorecard as a Markdown table: one row per measure, one column per policy and one
    /// for LBR against uniform, under a line that says what the figures are.
    pub fn to_text(&self, game_name: &str) -> String {
        let cols = self.ordered();
        let mut table: Vec<Vec<String>> = Vec::new();
        let mut header = vec!["measure".to_string()];
        header.extend(cols.iter().map(|(n, c)| format!("{n}: {}", c.policy)));
        header.push("uniform".into());
        table.push(header);
        let mut row = |name: &str, cells: Vec<String>, last: String| {
            let mut r = vec![name.to_string()];
            r.extend(cells);
            r.push(last);
            table.push(r);
        };
        let matched = |e: &Estimate| {
            let plain = interval(e.mean, e.ci95, true);
            match &e.aivat {
                Some(v) => format!("{plain} (AIVAT {})", interval(v.mean, v.ci95, true)),
                None => plain,
            }
        };
        row(
            "vs uniform",
            cols.iter().map(|(_, c)| matched(&c.vs_uniform)).collect(),
            String::new(),
        );
        row(
            "vs always-call",
            cols.iter()
                .map(|(_, c)| matched(&c.vs_always_call))
                .collect(),
            String::new(),
        );
        let sharp = SHARP_VARIANTS
            .into_iter()
            .filter(|v| self.lbr_sharp_uniform.contains_key(v.name()))
            .map(|v| (LbrRule::Sharp, v));
        let lbr_rows = LbrVariant::ALL
            .into_iter()
            .map(|v| (LbrRule::Standard, v))
            .chain(sharp);
        for (rule, v) in lbr_rows {
            let (of_card, uniform) = match rule {
                LbrRule::Standard => (Self::standard_rows as Rows, &self.lbr_uniform),
                LbrRule::Sharp => (Self::sharp_rows as Rows, &self.lbr_sharp_uniform),
            };
            let cells = cols
                .iter()
                .map(|(_, c)| {
                    let r = &of_card(c)[v.name()];
                    let ratio = match (r.ratio, r.ratio_ci95) {
                        (Some(q), Some(ci)) if ci.is_finite() => format!(" ({q:.3} ± {ci:.3})"),
                        (Some(q), _) => format!(" ({q:.3})"),
                        _ => String::new(),
                    };
                    format!(
                        "{}{ratio}",
                        interval(r.estimate.mean, r.estimate.ci95, false)
                    )
                })
                .collect();
            let u = &uniform[v.name()];
            row(&rule.label(v), cells, interval(u.mean, u.ci95, false));
        }
        let widths: Vec<usize> = (0..table[0].len())
            .map(|k| {
                table
                    .iter()
                    .map(|r| r[k].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |r: &[String]| {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, &w)| format!("{c:<w$}"))
                .collect();
            format!("| {} |", cells.join(" | "))
        };
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        let aivat = if self.policies.values().any(|c| c.vs_uniform.aivat.is_some()) {
            " and, in parentheses, AIVAT's unbiased estimate of the same mean on the same hands"
        } else {
            ""
        };
        let mut out = format!(
            "scorecard of {} on {game_name}, seed {}: mbb/hand ± 95% interval; matches: {} hands \
             of duplicate deals, the policy's winnings{aivat}; LBR: {} hands, LBR's winnings \
             (ratio to LBR's against uniform on the same deals ± paired 95% interval); {:.0} s\n",
            self.policy, self.seed, self.match_hands, self.hands, self.timing.seconds
        );
        out.push_str(&line(&table[0]));
        out.push('\n');
        out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
        for r in &table[1..] {
            out.push_str(&line(r));
            out.push('\n');
        }
        for (name, c) in &cols {
            for v in LbrVariant::ALL {
                let r = &c.lbr[v.name()];
                if let Some(rows) = &r.breakdown {
                    out.push_str(&format!(
                        "\nLBR-{} vs {name} ({}): {}\n",
                        v.name().to_uppercase(),
                        c.policy,
                        interval(r.estimate.mean, r.estimate.ci95, false)
                    ));
                    out.push_str(&breakdown_table(rows, r.estimate.hands));
                }
            }
        }
        out
    }
}

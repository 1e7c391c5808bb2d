//! `[armac]` keys that were retired: configs saved before (every run directory's and shipped
//! model's `config.toml` lists every key) still load when the key holds the value that behaves
//! as today; any other value is refused with the reason, naming the key.

use super::ConfigError;

/// A retired key, the values that still load (the behaviour that remains) and why it went.
struct Retired {
    key: &'static str,
    keeps: fn(&toml::Value) -> bool,
    why: &'static str,
}

/// The retired `armac.*` keys.
const RETIRED: &[Retired] = &[
    Retired {
        key: "candidate_decay",
        keeps: |v| v.as_float() == Some(0.0) || v.as_integer() == Some(0),
        why: "retired (never measured; candidates rank on each epoch's evaluations): only 0 \
              still loads",
    },
    Retired {
        key: "regret_target_growth",
        keeps: |v| v.as_float() == Some(0.0) || v.as_integer() == Some(0),
        why: "retired (measured and off in every shipped config): only 0 still loads",
    },
    Retired {
        key: "regret_hands",
        keeps: |v| v.as_integer() == Some(0),
        why: "retired (on Hold'em it raised π̄'s mean LBR ratio from 0.12 to 0.18, \
              docs/results.md): only 0 still loads",
    },
    Retired {
        // The same targets either way; the faster in-step path is the only one left.
        key: "targets_in_step",
        keeps: |v| v.as_bool().is_some(),
        why: "retired (the critic's targets are always computed in the step): must be a boolean",
    },
];

/// Takes the retired keys out of the `[armac]` table of `table`; an error names a retired key
/// whose value would behave differently today.
pub(super) fn strip_retired(table: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(armac) = table.get_mut("armac").and_then(toml::Value::as_table_mut) else {
        return Ok(());
    };
    for r in RETIRED {
        if let Some(v) = armac.get(r.key) {
            if !(r.keeps)(v) {
                return Err(ConfigError::Value {
                    key: format!("armac.{}", r.key),
                    reason: r.why.to_string(),
                });
            }
            armac.remove(r.key);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::strip_retired;

    /// A saved config with the retired keys at their remaining behaviour loads without them;
    /// another value is refused naming the key.
    #[test]
    fn retired_keys_load_at_their_remaining_value_only() {
        let mut t: toml::Table = "game = \"kuhn_poker\"\n[armac]\nepochs = 1\n\
             candidate_decay = 0.0\nregret_target_growth = 0.0\nregret_hands = 0\n\
             targets_in_step = false\n"
            .parse()
            .unwrap();
        strip_retired(&mut t).unwrap();
        assert_eq!(t["armac"].as_table().unwrap().len(), 1);
        for kv in [
            "candidate_decay = 0.5",
            "regret_hands = 16",
            "regret_target_growth = 0.5",
        ] {
            let mut t: toml::Table = format!("game = \"x\"\n[armac]\n{kv}\n").parse().unwrap();
            let e = strip_retired(&mut t).unwrap_err().to_string();
            let key = kv.split(' ').next().unwrap();
            assert!(e.contains(&format!("armac.{key}")), "{e}");
        }
    }
}

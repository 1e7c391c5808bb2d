use super::*;
use crate::rl::armac::actor::{AdvantageTarget, Behaviour, PastDraw};
use crate::rl::armac::memory::{MemoryKind, MemorySampling, MemoryTargets, MemoryWeights};

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

#[test]
fn recurrent_keys_default_and_validate() {
    let base = "game = \"kuhn_poker\"\n[armac]\nepochs = 1\n";
    let s = Config::from_table(table(base), "x")
        .unwrap()
        .armac()
        .unwrap();
    assert!(!s.recurrent);
    assert_eq!(s.unroll_length, 32);
    let mut t = table(base);
    apply_override(&mut t, "armac.recurrent=true").unwrap();
    apply_override(&mut t, "armac.unroll_length=4").unwrap();
    let s = Config::from_table(t, "x").unwrap().armac().unwrap();
    assert!(s.recurrent);
    assert_eq!(s.unroll_length, 4);
    let mut t = table(base);
    apply_override(&mut t, "armac.recurrent=true").unwrap();
    apply_override(&mut t, "armac.separate_regret_encoder=true").unwrap();
    let e = Config::from_table(t, "x").unwrap().armac().unwrap_err();
    assert!(
        e.to_string().contains("armac.separate_regret_encoder"),
        "{e}"
    );
    let mut t = table(base);
    apply_override(&mut t, "armac.unroll_length=0").unwrap();
    let e = Config::from_table(t, "x").unwrap().armac().unwrap_err();
    assert!(e.to_string().contains("armac.unroll_length"), "{e}");
    let t = table(&format!("{base}recurrent = \"yes\"\n"));
    let e = Config::from_table(t, "x").unwrap_err().to_string();
    assert!(e.contains("recurrent"), "{e}");
}

#[test]
fn memory_keys_default_and_bad_combinations_name_the_key() {
    let base = "game = \"leduc_poker\"\n[armac]\nepochs = 1\n";
    let s = Config::from_table(table(base), "x")
        .unwrap()
        .armac()
        .unwrap();
    assert_eq!(s.memory, MemoryKind::Replay);
    assert_eq!(s.memory_weights, MemoryWeights::Reach);
    // The reservoir memory plays the latest past epoch unless told otherwise.
    let mut t = table(base);
    apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
    apply_override(&mut t, "armac.memory_batch=32").unwrap();
    apply_override(&mut t, "armac.memory_weights=\"none\"").unwrap();
    let s = Config::from_table(t, "x").unwrap().armac().unwrap();
    assert_eq!(
        (s.memory, s.past_draw(), s.memory_batch, s.memory_weights),
        (
            MemoryKind::Reservoir,
            PastDraw::Latest,
            32,
            MemoryWeights::None
        )
    );
    for (extra, key) in [
        ("armac.past_draw=\"episode\"", "armac.past_draw"),
        ("armac.recurrent=true", "armac.memory"),
        ("armac.memory_batch=0", "memory_batch"),
        ("armac.memory_max_weight=0.5", "armac.memory_max_weight"),
        ("armac.memory_regret_power=-1", "armac.memory_regret_power"),
        ("armac.memory_policy_power=nan", "armac.memory_policy_power"),
    ] {
        let mut t = table(base);
        apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
        apply_override(&mut t, extra).unwrap();
        let e = Config::from_table(t, "x")
            .unwrap()
            .armac()
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{extra}: {e}");
    }
    let mut t = table(base);
    apply_override(&mut t, "armac.memory=\"sometimes\"").unwrap();
    let e = Config::from_table(t, "x").unwrap_err().to_string();
    assert!(e.contains("memory"), "{e}");
    // Mean targets: parsed with the reservoir, refused (naming the key) without it.
    {
        let (name, want) = ("infoset_mean", MemoryTargets::InfosetMean);
        let mut t = table(base);
        apply_override(&mut t, &format!("armac.memory_targets=\"{name}\"")).unwrap();
        let e = Config::from_table(t.clone(), "x")
            .unwrap()
            .armac()
            .unwrap_err()
            .to_string();
        assert!(e.contains("armac.memory_targets"), "{e}");
        apply_override(&mut t, "armac.memory=\"reservoir\"").unwrap();
        let s = Config::from_table(t, "x").unwrap().armac().unwrap();
        assert_eq!(s.memory_targets, want);
    }
    let mut t = table(base);
    apply_override(&mut t, "armac.memory_targets=\"median\"").unwrap();
    let e = Config::from_table(t, "x").unwrap_err().to_string();
    assert!(e.contains("memory_targets"), "{e}");
}

#[test]
fn target_and_behaviour_keys_default_parse_and_name_themselves() {
    let base = "game = \"leduc_poker\"\n[armac]\nepochs = 1\n";
    let s = Config::from_table(table(base), "x")
        .unwrap()
        .armac()
        .unwrap();
    assert_eq!(
        (s.advantage_target, s.behaviour, s.memory_sampling),
        (
            AdvantageTarget::History,
            Behaviour::Candidates,
            MemorySampling::Uniform
        )
    );
    let mut t = table(base);
    for o in [
        "armac.advantage_target=\"infoset\"",
        "armac.behaviour=\"uniform\"",
        "armac.memory_sampling=\"weighted\"",
    ] {
        apply_override(&mut t, o).unwrap();
    }
    let s = Config::from_table(t, "x").unwrap().armac().unwrap();
    assert_eq!(
        (s.advantage_target, s.behaviour, s.memory_sampling),
        (
            AdvantageTarget::Infoset,
            Behaviour::Uniform,
            MemorySampling::Weighted
        )
    );
    // The corrected targets work with either network kind.
    let mut t = table(base);
    apply_override(&mut t, "armac.advantage_target=\"corrected\"").unwrap();
    apply_override(&mut t, "armac.recurrent=true").unwrap();
    let s = Config::from_table(t, "x").unwrap().armac().unwrap();
    assert_eq!(s.advantage_target, AdvantageTarget::Corrected);
    let mut t = table(base);
    apply_override(&mut t, "armac.advantage_target=\"corrected_infoset\"").unwrap();
    let s = Config::from_table(t, "x").unwrap().armac().unwrap();
    assert_eq!(s.advantage_target, AdvantageTarget::CorrectedInfoset);
    // The shadow histories need information-state tensors: feed-forward networks only.
    for target in ["infoset", "corrected_infoset"] {
        let mut t = table(base);
        let o = format!("armac.advantage_target=\"{target}\"");
        apply_override(&mut t, &o).unwrap();
        apply_override(&mut t, "armac.recurrent=true").unwrap();
        let e = Config::from_table(t, "x")
            .unwrap()
            .armac()
            .unwrap_err()
            .to_string();
        assert!(e.contains("advantage_target"), "{target}: {e}");
    }
    // The chance baseline corrects the corrected targets, with feed-forward networks.
    let with = |extra: &[&str]| {
        let mut t = table(base);
        apply_override(&mut t, "armac.advantage_target=\"corrected\"").unwrap();
        apply_override(&mut t, "armac.chance_baseline=true").unwrap();
        for o in extra {
            apply_override(&mut t, o).unwrap();
        }
        Config::from_table(t, "x").unwrap().armac()
    };
    assert!(with(&[]).unwrap().chance_baseline);
    for extra in ["armac.advantage_target=\"history\"", "armac.recurrent=true"] {
        let e = with(&[extra]).unwrap_err().to_string();
        assert!(e.contains("chance_baseline"), "{extra}: {e}");
    }
    for (o, key) in [
        ("armac.behaviour=\"greedy\"", "behaviour"),
        ("armac.memory_sampling=\"often\"", "memory_sampling"),
        ("armac.advantage_target=\"public\"", "advantage_target"),
    ] {
        let mut t = table(base);
        apply_override(&mut t, o).unwrap();
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains(key), "{o}: {e}");
    }
}

#[test]
fn learning_keys_default_and_bad_values_name_the_key() {
    let base = "game = \"leduc_poker\"\n[armac]\nepochs = 1\n";
    let s = Config::from_table(table(base), "x")
        .unwrap()
        .armac()
        .unwrap();
    assert_eq!(s.past_draw(), PastDraw::Episode);
    assert_eq!(
        (s.polyak, s.adam_beta1, s.lr_decay_epochs, s.reward_scale),
        (0.0, 0.0, 0.0, None)
    );
    assert_eq!(s.loss_weights, [1.0; 4]);
    assert_eq!(s.learning_rate_at(1000), s.learning_rate);
    // Learner threads: the cores the local actors leave, at least one; none are left to
    // actors of another process.
    assert_eq!(s.learner_threads, 0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    use crate::run::armac::learner_threads;
    assert_eq!(learner_threads(0, Some(1)), (cores - 1).max(1));
    assert_eq!(learner_threads(0, Some(cores + 3)), 1);
    assert_eq!(learner_threads(0, None), cores);
    assert_eq!(learner_threads(3, Some(1)), 3);
    let mut t = table(base);
    for kv in [
        "armac.past_draw=\"latest\"",
        "armac.lr_decay_epochs=3",
        "armac.reward_scale=2000",
        "armac.loss_weights=[1,1,1,0.5]",
        "armac.polyak=0.99",
        "armac.adam_beta1=0.9",
        "armac.play_threshold=0.2",
    ] {
        apply_override(&mut t, kv).unwrap();
    }
    let s = Config::from_table(t.clone(), "x").unwrap().armac().unwrap();
    assert_eq!(s.play_threshold, 0.2);
    assert_eq!(s.past_draw(), PastDraw::Latest);
    assert_eq!(s.polyak_scope, PolyakScope::All);
    let mut t2 = t;
    for kv in [
        "armac.polyak_scope=\"regret\"",
        "armac.separate_regret_encoder=true",
    ] {
        apply_override(&mut t2, kv).unwrap();
    }
    let s2 = Config::from_table(t2, "x").unwrap().armac().unwrap();
    assert_eq!(s2.polyak_scope, PolyakScope::Regret);
    assert_eq!(s.reward_scale, Some(2000.0));
    assert_eq!(s.adam_beta1, 0.9);
    assert!((s.learning_rate_at(9) - s.learning_rate / 2.0).abs() < 1e-15);
    for (kv, key) in [
        ("armac.polyak=1.0", "armac.polyak"),
        ("armac.adam_beta1=1.0", "armac.adam_beta1"),
        ("armac.adam_beta1=-0.1", "armac.adam_beta1"),
        ("armac.lr_decay_epochs=-1", "armac.lr_decay_epochs"),
        ("armac.reward_scale=0", "armac.reward_scale"),
        ("armac.loss_weights=[1,1,1,-1]", "armac.loss_weights"),
        ("armac.exact_advantages=true", "armac.exact_advantages"),
        ("armac.tabular_w=true", "armac.tabular_w"),
        ("armac.learner_threads=2000", "armac.learner_threads"),
        ("armac.play_threshold=1.0", "armac.play_threshold"),
        ("armac.play_threshold=-0.1", "armac.play_threshold"),
        // Without separate_regret_encoder.
        ("armac.polyak_scope=\"regret\"", "armac.polyak_scope"),
    ] {
        let mut t = table(base);
        apply_override(&mut t, kv).unwrap();
        if key == "armac.exact_advantages" {
            apply_override(&mut t, "armac.exact_eval=false").unwrap();
        }
        let e = Config::from_table(t, "x").unwrap().armac().unwrap_err();
        assert!(e.to_string().contains(key), "{kv}: {e}");
    }
    let mut t = table(base);
    apply_override(&mut t, "armac.past_draw=\"sometimes\"").unwrap();
    let e = Config::from_table(t, "x").unwrap_err().to_string();
    assert!(e.contains("past_draw"), "{e}");
}

#[test]
fn string_choices_are_refused_while_typing_and_list_the_spellings() {
    let armac = "game = \"kuhn_poker\"\n[armac]\nepochs = 1\n";
    let sog = "game = \"kuhn_poker\"\n[sog]\nrounds = 1\n";
    for (base, kv, key, spellings) in [
        (
            armac,
            "armac.device=\"tpu\"",
            "armac.device",
            &["flex", "cpu", "wgpu", "cuda", "default"][..],
        ),
        (
            sog,
            "sog.device=\"gpu\"",
            "sog.device",
            &["flex", "cpu", "wgpu", "cuda", "default"],
        ),
        (
            sog,
            "sog.search.device=\"tpu\"",
            "sog.search.device",
            &["flex", "cpu", "wgpu", "cuda", "default"],
        ),
        (
            sog,
            "sog.search.engine=\"gpu\"",
            "sog.search.engine",
            &["scalar", "tensor"],
        ),
        (
            sog,
            "sog.search.final=\"best\"",
            "sog.search.final",
            &["average", "current"],
        ),
    ] {
        let mut t = table(base);
        apply_override(&mut t, kv).unwrap();
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains(&format!("key `{key}`")), "{kv}: {e}");
        for s in spellings {
            assert!(e.contains(&format!("`{s}`")), "{kv}: {e}");
        }
    }
}

#[test]
fn every_device_spelling_reaches_the_settings_as_written() {
    for dev in ["flex", "cpu", "wgpu", "cuda", "default"] {
        let text = format!("game = \"kuhn_poker\"\n[armac]\nepochs = 1\ndevice = \"{dev}\"\n");
        let c = Config::from_table(table(&text), "x").unwrap();
        assert_eq!(c.armac().unwrap().device, dev);
        assert!(c.to_toml().contains(&format!("device = \"{dev}\"")));
        let text = format!("game = \"kuhn_poker\"\n[sog]\nrounds = 1\ndevice = \"{dev}\"\n");
        let c = Config::from_table(table(&text), "x").unwrap();
        assert_eq!(c.sog().unwrap().device, dev);
    }
    let c = Config::from_table(table("game = \"kuhn_poker\"\n[sog]\nrounds = 1\n"), "x").unwrap();
    let s = c.sog().unwrap();
    assert_eq!(
        (
            s.device.as_str(),
            s.search_engine.as_str(),
            s.search_device.as_str()
        ),
        ("flex", "scalar", "cpu")
    );
    assert!(s.final_average);
    let mut t = table("game = \"kuhn_poker\"\n[sog]\nrounds = 1\n");
    apply_override(&mut t, "sog.search.final=\"current\"").unwrap();
    assert!(
        !Config::from_table(t, "x")
            .unwrap()
            .sog()
            .unwrap()
            .final_average
    );
}

/// The shipped configs keep their spellings: the settings and the resolved config carry the
/// string choices as the file writes them.
#[test]
fn shipped_configs_keep_their_string_choices() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let raw = read_table(&p).unwrap();
        let (c, _) = Config::load(p.to_str().unwrap(), &[]).unwrap();
        let resolved: toml::Table = c.to_toml().parse().unwrap();
        let get = |t: &toml::Table, key: &str| -> Option<String> {
            let mut v = t.get(key.split('.').next()?)?;
            for part in key.split('.').skip(1) {
                v = v.get(part)?;
            }
            v.as_str().map(str::to_string)
        };
        for key in [
            "armac.device",
            "sog.device",
            "sog.search.device",
            "sog.search.engine",
            "sog.search.final",
        ] {
            if let Some(v) = get(&raw, key) {
                assert_eq!(
                    get(&resolved, key),
                    Some(v.clone()),
                    "{}: {key}",
                    p.display()
                );
                n += 1;
            }
        }
        if let Some(v) = get(&raw, "armac.device") {
            assert_eq!(c.armac().unwrap().device, v, "{}", p.display());
        }
        if let Some(v) = get(&raw, "sog.device") {
            assert_eq!(c.sog().unwrap().device, v, "{}", p.display());
        }
    }
    assert!(n > 0, "no string choices in {}", dir.display());
}

#[test]
fn schedule_keys_have_one_bound_and_one_message_in_every_run_kind() {
    let bases = [
        "game = \"kuhn_poker\"\n[armac]\nepochs = 1\n",
        "game = \"kuhn_poker\"\n[sog]\nrounds = 1\n",
    ];
    for base in bases {
        for (kv, key, reason) in [
            ("eval.every=0", "eval.every", "must be at least 1"),
            (
                "checkpoint.every_seconds=0",
                "checkpoint.every_seconds",
                "must be positive",
            ),
            (
                "checkpoint.every_seconds=nan",
                "checkpoint.every_seconds",
                "must be positive",
            ),
            (
                "checkpoint.every_epochs=0",
                "checkpoint.every_epochs",
                "must be at least 1",
            ),
        ] {
            let mut t = table(base);
            apply_override(&mut t, kv).unwrap();
            let c = Config::from_table(t, "x").unwrap();
            let e = if c.armac.is_some() {
                c.armac().unwrap_err()
            } else {
                c.sog().unwrap_err()
            };
            assert_eq!(
                e.to_string(),
                format!("config key `{key}`: {reason}"),
                "{kv}"
            );
        }
    }
}

#[test]
fn key_reference_lists_every_key_of_the_structs_once() {
    let keys = key_reference();
    for k in [
        "game",
        "seed",
        "solver.algorithm",
        "solver.iterations",
        "solver.epsilon",
        "solver.device",
        "armac.hidden",
        "armac.device",
        "armac.loss_weights",
        "sog.rounds",
        "sog.search.engine",
        "sog.search.final",
        "sog.net.zero_sum",
        "sog.selfplay.td1",
        "eval.every",
        "checkpoint.every_seconds",
        "checkpoint.every_epochs",
        "cluster.broker",
        "cluster.reconnect_secs",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k} missing from {keys:?}");
    }
    for section in ["solver", "armac", "sog", "sog.search", "eval", "cluster"] {
        assert!(
            !keys.iter().any(|x| x == section),
            "section {section} as a key"
        );
    }
    let unique: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len());
    // Every value of a resolved config with every section is a listed key.
    let text = "game = \"kuhn_poker\"\n\
                [solver]\nalgorithm = \"dcfr\"\niterations = 1\naveraging = \"power\"\n\
                alpha = 1.5\nbeta = 0.5\ngamma = 2.0\n\
                [armac]\nepochs = 1\nreward_scale = 2.0\npast_draw = \"latest\"\n\
                [sog]\nrounds = 1\n[sog.search]\ntop_k = 2\nmax_nodes = 10\n\
                [sog.selfplay]\nsolver_s = 3\n\
                [cluster]\nbroker = \"redis://localhost\"\nrun = \"r\"\n";
    let c = Config::from_table(table(text), "x").unwrap();
    let mut leaves = Vec::new();
    leaf_keys("", &toml::Value::try_from(&c).unwrap(), &mut leaves);
    for leaf in &leaves {
        assert!(keys.contains(leaf), "{leaf} is not in the key reference");
    }
    // The hand list of `[solver]`'s own fields is the struct's: each is a field (not left in
    // the flattened table), and the struct writes no other.
    let solver = c.solver.as_ref().unwrap();
    assert!(solver.extra.is_empty(), "{:?}", solver.extra);
    let mut own: Vec<String> = leaves
        .iter()
        .filter_map(|k| k.strip_prefix("solver.").map(str::to_string))
        .collect();
    own.sort();
    let mut listed: Vec<String> = keys::SOLVER_KEYS.iter().map(|k| k.to_string()).collect();
    listed.sort();
    assert_eq!(own, listed);
}

/// Dotted keys of the leaves (non-table values) of `v`.
fn leaf_keys(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
    let mut stack = vec![(prefix.to_string(), v)];
    while let Some((path, value)) = stack.pop() {
        let Some(t) = value.as_table() else {
            out.push(path);
            continue;
        };
        stack.extend(t.iter().map(|(k, v)| match path.as_str() {
            "" => (k.clone(), v),
            p => (format!("{p}.{k}"), v),
        }));
    }
}

#[test]
fn size_keys_have_upper_bounds_named_in_the_message() {
    let armac = "game = \"kuhn_poker\"\n[armac]\nepochs = 1\n";
    let sog = "game = \"kuhn_poker\"\n[sog]\nrounds = 1\n";
    for (base, kv, key, bound) in [
        (armac, "armac.actors=100000", "armac.actors", "at most 1024"),
        (
            armac,
            "armac.hidden=100000000",
            "armac.hidden",
            "at most 65536",
        ),
        (armac, "armac.layers=65", "armac.layers", "at most 64"),
        // 32768² × 4 layers × 4 bytes = 16 GiB.
        (armac, "armac.hidden=32768", "armac.hidden", "8192 MiB"),
        (
            armac,
            "armac.batch_trajectories=100000",
            "armac.batch_trajectories",
            "at most 65536",
        ),
        (
            armac,
            "armac.replay_capacity=100000000",
            "armac.replay_capacity",
            "at most 16777216",
        ),
        (
            armac,
            "armac.memory_capacity=100000000",
            "armac.memory_capacity",
            "at most 67108864",
        ),
        (
            sog,
            "sog.selfplay.solvers=5000",
            "sog.selfplay.solvers",
            "at most 1024",
        ),
        (
            sog,
            "sog.net.hidden=100000000",
            "sog.net.hidden",
            "at most 65536",
        ),
        (
            sog,
            "sog.selfplay.buffer=100000000",
            "sog.selfplay.buffer",
            "at most 67108864",
        ),
    ] {
        let mut t = table(base);
        apply_override(&mut t, kv).unwrap();
        if key == "armac.hidden" && bound.ends_with("MiB") {
            apply_override(&mut t, "armac.layers=4").unwrap();
        }
        let c = Config::from_table(t, "x").unwrap();
        let e = if base == armac {
            c.armac().unwrap_err().to_string()
        } else {
            c.sog().unwrap_err().to_string()
        };
        assert!(e.contains(key) && e.contains(bound), "{kv}: {e}");
        assert!(!e.contains('\n'), "{kv}: one line: {e}");
    }
    // At the bounds: accepted.
    for kv in ["armac.actors=1024", "armac.hidden=8192", "armac.layers=64"] {
        let mut t = table(armac);
        apply_override(&mut t, kv).unwrap();
        if kv == "armac.layers=64" {
            apply_override(&mut t, "armac.hidden=64").unwrap();
        }
        Config::from_table(t, "x").unwrap().armac().unwrap();
    }
}

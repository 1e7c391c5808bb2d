use super::*;
use crate::rl::sog::settings::engine_builder;
use crate::run::config::apply_override;

fn base() -> toml::Table {
    "game = \"leduc_poker\"\n[sog]\nrounds = 1\n"
        .parse()
        .unwrap()
}

/// `engine = "tensor"` is accepted with the CPU backend (and builds a tensor engine);
/// a device the tensor engine cannot use names `sog.search.device`.
#[test]
fn the_tensor_engine_is_accepted_and_its_device_checked() {
    let mut t = base();
    apply_override(&mut t, "sog.search.engine=\"tensor\"").unwrap();
    let s = Config::from_table(t.clone(), "x").unwrap().sog().unwrap();
    let b = engine_builder(&s).expect("a tensor engine builder");
    assert_eq!(b.name(), "tensor");
    assert!(resolver_config(&s, 5).search.engine.is_some());
    let scalar = Config::from_table(base(), "x").unwrap().sog().unwrap();
    assert!(engine_builder(&scalar).is_none());
    for dev in ["tpu", "gpu"] {
        let mut t = t.clone();
        apply_override(&mut t, &format!("sog.search.device=\"{dev}\"")).unwrap();
        let e = Config::from_table(t, "x")
            .and_then(|c| c.sog())
            .unwrap_err();
        assert!(e.to_string().contains("sog.search.device"), "{dev}: {e}");
    }
}

/// Bad values are refused before anything runs, and the error names the key.
#[test]
fn bad_sog_values_name_the_key() {
    let s = Config::from_table(base(), "x").unwrap().sog().unwrap();
    assert_eq!((s.simulations, s.solver_simulations), (50, 50));
    assert!(s.final_average);
    for (kv, key) in [
        ("sog.search.s=0", "sog.search.s"),
        ("sog.search.c=0", "sog.search.c"),
        ("sog.search.c=-1", "sog.search.c"),
        ("sog.search.alpha=1.5", "sog.search.alpha"),
        ("sog.search.puct=-1", "sog.search.puct"),
        ("sog.search.final=\"best\"", "sog.search.final"),
        ("sog.selfplay.epsilon=-0.1", "sog.selfplay.epsilon"),
        ("sog.selfplay.epsilon=2", "sog.selfplay.epsilon"),
        ("sog.selfplay.p_rec=1.5", "sog.selfplay.p_rec"),
        ("sog.net.batch=0", "sog.net.batch"),
        ("sog.net.learning_rate=0", "sog.net.learning_rate"),
        (
            "sog.selfplay.queries_per_search=0",
            "sog.selfplay.queries_per_search",
        ),
        ("sog.selfplay.solver_s=0", "sog.selfplay.solver_s"),
        ("sog.device=\"tpu\"", "sog.device"),
        ("sog.search.engine=\"gpu\"", "sog.search.engine"),
        ("sog.search.batch=0", "sog.search.batch"),
        ("sog.search.top_k=0", "sog.search.top_k"),
        ("sog.search.device=\"cuda\"", "sog.search.device"),
        ("sog.selfplay.td1=-0.5", "sog.selfplay.td1"),
        ("sog.selfplay.sync_every=0", "sog.selfplay.sync_every"),
        ("sog.selfplay.actors=1", "sog.selfplay.solvers"),
    ] {
        let mut t = base();
        apply_override(&mut t, kv).unwrap();
        let e = Config::from_table(t, "x")
            .and_then(|c| c.sog())
            .unwrap_err();
        assert!(e.to_string().contains(key), "{kv}: {e}");
    }
    // Unknown keys and wrong types are refused while typing the table.
    for (kv, key) in [
        ("sog.search.simulations=5", "simulations"),
        ("sog.selfplay.p_recursive=0.1", "p_recursive"),
        ("sog.net.hidden=\"wide\"", "hidden"),
    ] {
        let mut t = base();
        apply_override(&mut t, kv).unwrap();
        let e = Config::from_table(t, "x").unwrap_err().to_string();
        assert!(e.contains(key), "{kv}: {e}");
    }
}

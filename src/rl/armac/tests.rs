use super::exact::Exact;
use super::residency::{
    load_resident, reservoir_path, resident_snapshots, save_net, working_set_capacity,
};
use super::state::{ArmacState, Nets};
use crate::games::load_game;
use crate::nn::armac::{ActBatch, ArmacNetConfig, ArmacPolicyNet, SnapshotPrecision};
use crate::rl::armac::candidates::{Candidate, CandidateStats};
use crate::rl::armac::reservoir::Reservoir;
use crate::rl::armac::working_set::WorkingSet;
use crate::util::SplitMix64;
fn state_with(working_set: &[u64], items: &[u64], epoch: u64) -> ArmacState {
    let mut rng = SplitMix64::new(1);
    let mut reservoir = Reservoir::new(items.len().max(1));
    for &j in items {
        reservoir.push(j, &mut rng);
    }
    let mut ws = WorkingSet::default();
    ws.update(working_set, working_set.len(), 0, &mut rng);
    ArmacState {
        epoch,
        learning_steps: 0,
        acting_steps: 0,
        episodes: 0,
        nodes_touched: 0,
        learning_decisions: 0,
        rows_learned: 0,
        elapsed_seconds: 0.0,
        cpu_seconds: 0.0,
        rng: 0,
        reservoir,
        working_set: ws,
        candidate_stats: CandidateStats::default(),
        best: Candidate::Uniform,
        game: "kuhn_poker".into(),
        keep_previous: false,
        broker_cursor: None,
        broker_seen: Default::default(),
    }
}

/// The critic diagnostic's inputs: `critic_q` puts, at every child `c = (h a)` of a decision
/// history `h` of player `p`, the network's `q_p(h, a)` for that history's own state (both
/// players' information-state tensors, replayed here independently), times the scale.
#[test]
fn critic_q_reads_the_acting_players_critic_at_every_history() {
    let game = load_game("kuhn_poker").unwrap();
    let ex = Exact::new(&game, false).unwrap().unwrap();
    let na = game.num_distinct_actions();
    let isz = game.information_state_tensor_size();
    let cfg = ArmacNetConfig::new(isz, na)
        .with_encoder_hidden(8)
        .with_head_hidden(8);
    let net = ArmacPolicyNet::init(cfg, 3).unwrap();
    let q = ex.critic_q(&game, &net, na, 2.0).unwrap().unwrap();
    let ht = ex.histories(&game).unwrap();
    let mut checked = 0;
    for h in 0..ht.len() {
        let crate::tree::history::HistoryKind::Decision(p) = ht.kind[h] else {
            continue;
        };
        let st = crate::game::replay(game.as_ref(), &ht.actions_to(h)).unwrap();
        assert_eq!(st.turn(), crate::game::Turn::Player(p), "history {h}");
        let mut t = [vec![0.0; isz], vec![0.0; isz]];
        for (i, ti) in t.iter_mut().enumerate() {
            st.information_state_tensor(i, ti);
        }
        let legal: Vec<bool> = (0..na).map(|a| st.legal_actions().contains(&a)).collect();
        let mut b = ActBatch::default();
        b.push(&t[p], &t[0], &t[1], &legal);
        let out = net.evaluate(&b);
        let want = if p == 0 { &out.q0 } else { &out.q1 };
        for c in ht.children(h) {
            let w = f64::from(want[ht.action[c]]) * 2.0;
            assert!(
                (q[c] - w).abs() < 1e-5,
                "history {h} child {c}: {} vs {w}",
                q[c]
            );
            checked += 1;
        }
    }
    // Kuhn: 6 deals × 4 decision histories (p0 first, p1 after a pass or a bet, p0 after
    // pass-bet), two actions each.
    assert_eq!(checked, 48);
}

/// The networks held in memory follow the working set: members' policy and critic
/// networks are read once (then hit), leavers are dropped, and a file that no longer
/// matches the sum recorded when it was written is refused with its path named.
#[test]
fn resident_networks_follow_the_working_set_and_are_checked() {
    let dir = std::env::temp_dir().join(format!("armac_resident_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("reservoir")).unwrap();
    let cfg = ArmacNetConfig::new(5, 3)
        .with_encoder_hidden(8)
        .with_head_hidden(8);
    let mut sums = std::collections::HashMap::new();
    for id in 0..=6u64 {
        let net = ArmacPolicyNet::init(cfg.clone(), id).unwrap();
        sums.insert(
            id,
            save_net(&dir, id, &net, SnapshotPrecision::F16).unwrap(),
        );
    }
    let mut nets = Nets::new();
    // Working set {1, 4} at epoch 6: θ^1, θ^2, θ^4, θ^5 and the latest θ^6.
    let st = state_with(&[1, 4], &[0, 1, 2, 3, 4, 5], 6);
    let s = load_resident(&dir, &st, &cfg, &mut nets, &sums).unwrap();
    assert_eq!((s.hits, s.loads), (0, 5));
    let mut held: Vec<u64> = nets.keys().copied().collect();
    held.sort();
    assert_eq!(held, [1, 2, 4, 5, 6]);
    // {4, 0}: θ^1 (now epoch 0's critic), θ^4, θ^5, θ^6 stay, θ^0 is read, θ^2 leaves.
    let st = state_with(&[4, 0], &[0, 1, 2, 3, 4, 5], 6);
    let s = load_resident(&dir, &st, &cfg, &mut nets, &sums).unwrap();
    assert_eq!((s.hits, s.loads), (4, 1));
    let mut held: Vec<u64> = nets.keys().copied().collect();
    held.sort();
    assert_eq!(held, [0, 1, 4, 5, 6]);
    // `past_draw = "latest"` also keeps the previous epoch's policy θ^5 (here already held)
    // and, with working set {1}, reads nothing else: θ^1, θ^2, θ^5, θ^6.
    let mut st = state_with(&[1], &[0, 1, 2, 3, 4, 5], 6);
    st.keep_previous = true;
    assert_eq!(
        resident_snapshots(&st).into_iter().collect::<Vec<_>>(),
        [1, 2, 5, 6]
    );
    st.keep_previous = false;
    assert_eq!(
        resident_snapshots(&st).into_iter().collect::<Vec<_>>(),
        [1, 2, 6]
    );
    // The policies in memory are the files' networks.
    let probe = crate::nn::armac::synthetic_act_batch(&cfg, 4, 3);
    let on_disk = ArmacPolicyNet::load_file(cfg.clone(), &reservoir_path(&dir, 0)).unwrap();
    assert_eq!(nets[&0].evaluate(&probe), on_disk.evaluate(&probe));
    // A reloaded file that changed since it was written is refused.
    let path = reservoir_path(&dir, 3);
    let mut bytes = std::fs::read(&path).unwrap();
    let k = bytes.len() / 2;
    bytes[k] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let st = state_with(&[3], &[0, 1, 2, 3, 4, 5], 6);
    let e = load_resident(&dir, &st, &cfg, &mut nets, &sums)
        .unwrap_err()
        .to_string();
    assert!(e.contains("net_000003.bpk") && e.contains("sum"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn working_set_capacity_follows_the_budget() {
    // 1 MiB per network: 64 MiB hold 32 past epochs (policy and critic each).
    assert_eq!(working_set_capacity(64, 1 << 20), 32);
    assert_eq!(working_set_capacity(1, 10 << 20), 1, "at least one epoch");
}

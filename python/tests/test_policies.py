"""Solvers, NashConv against OpenSpiel, policy conversion, models on pyspiel states, LBR and
matches against the `armac-eval` command line, and the errors."""

import random
import shutil

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import cfr, exploitability

import armac
from conftest import ROOT, armac_eval_json


def test_cfr_plus_on_leduc_scored_by_openspiel():
    game = armac.load_game("leduc_poker")
    pgame = pyspiel.load_game("leduc_poker")
    policy = armac.solve(game, "cfr+", iterations=300)
    ours = armac.nash_conv(game, policy)
    theirs = exploitability.nash_conv(pgame, policy.to_openspiel(pgame))
    assert abs(ours - theirs) < 1e-9
    assert ours < 0.1  # CFR+ after 300 iterations; uniform play is 4.747
    values = armac.best_response_values(game, policy)
    assert abs(sum(values) - ours) < 1e-9  # zero-sum: NashConv is the sum of BR values


@pytest.mark.parametrize("algorithm,keys", [("os-mccfr", {"epsilon": 0.6}), ("dcfr", {}), ("ftrl", {})])
def test_every_solver_family_runs(algorithm, keys):
    assert algorithm in armac.algorithms()
    p = armac.solve("kuhn_poker", algorithm, iterations=50, seed=1, **keys)
    assert len(p) == 12
    assert armac.nash_conv("kuhn_poker", p) < 0.9


def test_openspiel_policy_round_trip():
    pgame = pyspiel.load_game("leduc_poker")
    solver = cfr.CFRPlusSolver(pgame)  # OpenSpiel's Python CFR+: a TabularPolicy average
    for _ in range(5):
        solver.evaluate_and_update_policy()
    theirs = solver.average_policy()
    assert isinstance(theirs, os_policy.TabularPolicy)
    ours = armac.policy_from_openspiel(theirs)
    back = ours.to_openspiel(pgame)
    np.testing.assert_array_equal(back.action_probability_array, theirs.action_probability_array)
    expected = exploitability.nash_conv(pgame, theirs)
    assert abs(armac.nash_conv("leduc_poker", theirs) - expected) < 1e-9
    assert abs(armac.nash_conv(pgame, ours) - expected) < 1e-9


def _random_decisions(pgame, count, seed):
    rng = random.Random(seed)
    trajectories, states = [], 0
    while states < count:
        s = pgame.new_initial_state()
        decisions = []
        while not s.is_terminal():
            if not s.is_chance_node():
                decisions.append(s.clone())
            s.apply_action(rng.choice(s.legal_actions()))
        trajectories.append((list(s.history()), decisions))
        states += len(decisions)
    return trajectories


def test_model_drives_pyspiel_universal_poker(hunl_model):
    model = armac.load_model(hunl_model)
    assert isinstance(model, os_policy.Policy)
    game_string = model.armac_game.load_string()
    pgame = pyspiel.load_game(game_string)
    trajectories = _random_decisions(pgame, 200, seed=5)
    tensors, masks, expected = [], [], []
    for history, decisions in trajectories:
        cli = armac_eval_json(
            "replay", "--game", game_string, "--actions", ",".join(map(str, history)), "--policy", str(hunl_model)
        )
        cli_probs = {len(step["history"]): step["probabilities"] for step in cli["steps"] if step["probabilities"]}
        for s in decisions:
            probs = model.action_probabilities(s)
            assert list(probs) == list(s.legal_actions())
            assert all(p >= 0 for p in probs.values())
            assert abs(sum(probs.values()) - 1) < 1e-9
            np.testing.assert_allclose(list(probs.values()), cli_probs[len(s.history())], rtol=0, atol=1e-12)
            tensors.append(s.information_state_tensor())
            mask = np.zeros(pgame.num_distinct_actions(), dtype=bool)
            mask[s.legal_actions()] = True
            masks.append(mask)
            expected.append([probs.get(a, 0.0) for a in range(pgame.num_distinct_actions())])
    batched = model.action_probabilities_batch(np.array(tensors), np.array(masks))
    assert batched.shape == (len(expected), pgame.num_distinct_actions())
    np.testing.assert_allclose(batched, np.array(expected), atol=1e-6)


def test_lbr_of_a_python_uniform_policy_equals_the_cli():
    def uniform(state):
        n = len(state.legal_actions())
        return [1.0 / n] * n

    ours = armac.lbr(uniform, variant="fc", hands=40, seed=3, preflop_samples=500)
    cli = armac_eval_json(
        "lbr", "--policy", "uniform", "--variant", "fc", "--hands", "40", "--seed", "3", "--preflop-samples", "500"
    )
    assert ours["hands"] == cli["hands"] == 40
    assert ours["mean_mbb"] == pytest.approx(cli["mean"], abs=1e-9)  # the CLI's mbb/hand
    assert ours["ci95_mbb"] == pytest.approx(cli["ci95"], abs=1e-9)
    assert ours["mean_chips"] == pytest.approx(cli["mean_chips"], abs=1e-9)
    assert set(ours) == {
        "variant", "policy", "hands", "mean_chips", "ci95_chips", "mean_mbb", "ci95_mbb",
        "seat_mean_chips", "seconds", "seed", "game",
    }
    assert ours["seed"] == 3 and len(ours["seat_mean_chips"]) == 2


def test_match_of_a_model_equals_the_cli(hunl_model):
    model = armac.load_model(hunl_model)
    ours = armac.match(model, "uniform", hands=200, seed=1)
    cli = armac_eval_json("match", "--a", str(hunl_model), "--b", "uniform", "--hands", "200", "--seed", "1")
    assert ours["mean_mbb"] == pytest.approx(cli["mean_mbb"], abs=1e-9)
    exact = armac.match("first-legal", "uniform", game="kuhn_poker")
    assert exact["exact"] and exact["hands"] == 0
    assert set(exact) == {"game", "a", "b", "seed", "mean", "ci95", "seat_mean", "hands", "exact", "mean_mbb", "ci95_mbb",
                          "hands_written"}
    assert exact["mean_mbb"] is None and exact["a"] == "first-legal" and len(exact["seat_mean"]) == 2


def test_bad_inputs_raise_clear_exceptions(tmp_path, hunl_model):
    with pytest.raises(armac.GameError, match="no_such_game"):
        armac.solve("no_such_game")
    with pytest.raises(armac.ConfigError, match="solver.epsilonn"):
        armac.solve("kuhn_poker", "os-mccfr", iterations=5, epsilonn=0.5)
    with pytest.raises(armac.ConfigError, match="cfx"):
        armac.solve("kuhn_poker", "cfx", iterations=5)
    kuhn = armac.solve("kuhn_poker", "cfr", iterations=5)
    with pytest.raises(armac.PolicyError, match="kuhn_poker.*leduc_poker"):
        armac.nash_conv("leduc_poker", kuhn)
    with pytest.raises(armac.PolicyError):
        kuhn.to_openspiel(pyspiel.load_game("leduc_poker"))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        armac.load_model(tmp_path / "nowhere")
    broken = tmp_path / "broken_model"
    shutil.copytree(hunl_model, broken)
    victim = max((p for p in broken.rglob("*") if p.is_file() and p.name != "manifest.json"), key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(armac.PolicyError, match=victim.name):
        armac.load_model(broken)
    model = armac.load_model(hunl_model)
    with pytest.raises(armac.PolicyError, match="leduc_poker"):
        model.action_probabilities(pyspiel.load_game("leduc_poker").new_initial_state().child(0).child(1))
    with pytest.raises(armac.PolicyError, match="kuhn_poker"):
        armac.match(model, "uniform", game="kuhn_poker")

    def wrong_length(state):
        return [1.0]

    with pytest.raises(armac.PolicyError, match="1 probabilities for"):
        armac.nash_conv("kuhn_poker", wrong_length)

    def raises(state):
        raise ZeroDivisionError("inside the user's policy")

    with pytest.raises(ZeroDivisionError, match="inside the user's policy"):
        armac.lbr(raises, variant="fc", hands=4)
    with pytest.raises(ValueError, match="fcx"):
        armac.lbr("uniform", variant="fcx", hands=4)
    with pytest.raises(ValueError, match="LBR plays heads-up no-limit poker"):
        armac.lbr("uniform", hands=4, game="leduc_poker")


def test_match_with_aivat_reports_the_cli_estimate(hunl_model):
    model = armac.load_model(hunl_model)
    ours = armac.match(model, "uniform", hands=40, seed=2, aivat=True)
    cli = armac_eval_json("match", "--a", str(hunl_model), "--b", "uniform", "--hands", "40", "--seed", "2", "--aivat")
    assert ours["mean_mbb"] == pytest.approx(cli["mean_mbb"], abs=1e-9)
    assert ours["aivat_mean_mbb"] == pytest.approx(cli["aivat"]["mean_mbb"], abs=1e-6)
    assert ours["aivat_ci95_mbb"] == pytest.approx(cli["aivat"]["ci95_mbb"], abs=1e-6)
    assert ours["aivat"]["values"] == cli["aivat"]["values"]
    # On Leduc the exact value is known: AIVAT covers it, with a narrower interval.
    leduc = str(ROOT / "models" / "leduc_armac")
    exact = armac.match(leduc, "uniform", game="leduc_poker")
    r = armac.match(leduc, "uniform", game="leduc_poker", hands=4000, seed=3, sampled=True, aivat=True)
    assert abs(r["aivat"]["mean"] - exact["mean"]) <= 1.5 * r["aivat"]["ci95"]
    assert r["aivat"]["ci95"] < r["ci95"]
    assert "aivat_mean_mbb" not in r  # Leduc has no big blind
    with pytest.raises(ValueError, match="aivat"):
        armac.match("uniform", "always-call", hands=10, aivat=True)


def test_every_policy_at_fault_raises_policy_error(tmp_path):
    # A name that is no policy, in every entry point that takes one.
    with pytest.raises(armac.PolicyError, match="nosuch"):
        armac.lbr("nosuch", variant="fc", hands=4)
    with pytest.raises(armac.PolicyError, match="nosuch"):
        armac.match("nosuch", "uniform", game="kuhn_poker")
    with pytest.raises(armac.PolicyError, match="nosuch"):
        armac.nash_conv("kuhn_poker", "nosuch")

    # Unusable probabilities from a Python policy, in LBR and in a sampled match.
    def short(state):
        return [1.0]

    with pytest.raises(armac.PolicyError):
        armac.lbr(short, variant="fc", hands=4)
    with pytest.raises(armac.PolicyError, match="1 probabilities for"):
        armac.match(short, "uniform", game="kuhn_poker", sampled=True, hands=4)

    # A table with an information state the game does not have.
    kuhn = armac.solve("kuhn_poker", "cfr", iterations=5)
    table = dict(kuhn.table())
    table["9zz"] = [(0, 0.5), (1, 0.5)]
    extra = armac.TabularPolicy.from_table("kuhn_poker", table)
    with pytest.raises(armac.PolicyError, match="9zz"):
        armac.nash_conv("kuhn_poker", extra)

    # A tabular solver run where a network is expected names its policy file.
    run = tmp_path / "cfr_run"
    armac.train(ROOT / "configs" / "kuhn_cfr.toml", out=run, overrides={"solver.iterations": 5})
    with pytest.raises(armac.PolicyError, match="policy.json"):
        armac.load_model(run)
    with pytest.raises(armac.PolicyError, match="policy.json"):
        armac.match(str(run), "uniform", game="kuhn_poker")


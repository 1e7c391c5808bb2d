"""Games and states: every value pyspiel gives along random playouts."""

import random

import numpy as np
import pyspiel
import pytest

import armac


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice", "hunl_fcpa"])
def test_states_match_pyspiel_along_random_playouts(name):
    game = armac.load_game(name)
    pgame = pyspiel.load_game(game.load_string())
    assert game.num_distinct_actions() == pgame.num_distinct_actions()
    assert game.information_state_tensor_size() == pgame.information_state_tensor_size()
    rng = random.Random(7)
    checked = 0
    for _ in range(30):
        s, ps = game.new_initial_state(), pgame.new_initial_state()
        while True:
            assert s.current_player() == ps.current_player()
            assert s.is_terminal() == ps.is_terminal()
            if s.is_terminal():
                assert s.returns() == list(ps.returns())
                break
            assert s.legal_actions() == list(ps.legal_actions())
            if s.is_chance_node():
                outcomes = s.chance_outcomes()
                assert [a for a, _ in outcomes] == [a for a, _ in ps.chance_outcomes()]
                np.testing.assert_allclose([p for _, p in outcomes], [p for _, p in ps.chance_outcomes()])
            else:
                for p in (0, 1):
                    assert s.information_state_string(p) == ps.information_state_string(p)
                    t = s.information_state_tensor(p)
                    assert t.dtype == np.float32
                    np.testing.assert_array_equal(t, np.asarray(ps.information_state_tensor(p), dtype=np.float32))
                checked += 1
            a = rng.choice(s.legal_actions())
            s.apply_action(a)
            ps.apply_action(a)
        assert s.history() == list(ps.history())
    assert checked > 0


def test_illegal_action_and_bad_game_raise_clear_errors():
    with pytest.raises(armac.GameError, match="leduc_pokr"):
        armac.load_game("leduc_pokr")
    with pytest.raises(ValueError, match="leduc_pokr"):
        armac.load_game("leduc_pokr")
    with pytest.raises(armac.GameError, match="bad parameter"):
        armac.load_game("leduc_poker(players=7)")
    s = armac.load_game("kuhn_poker").new_initial_state()
    with pytest.raises(armac.GameError, match="illegal action 9"):
        s.apply_action(9)
    child = s.child(0)
    assert child.history() == [0] and s.history() == []

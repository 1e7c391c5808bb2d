"""`armac-eval match --hands-out`: pokerkit reads every hand of a 1,000-hand match and replays
it, action by action, to the finishing stacks armac wrote; every bet is FCPA's pot raise or
all-in by pokerkit's own count, and the stacks add up to the match's reported means."""

import pathlib

import pytest

from conftest import ROOT, armac_eval_json

pokerkit = pytest.importorskip("pokerkit")


def replay(hh) -> list[int]:
    """pokerkit's final stacks of a hand; fails if pokerkit had to skip or repair an action, or
    if a bet or raise is neither FCPA's pot-sized raise nor all-in, both computed from
    pokerkit's own pot and stacks just before it."""
    applied = []
    state = None
    before = None  # (street bets, stacks, total pot) before the next operation
    for state, action in hh.state_actions:
        if action is not None:
            applied.append(action)
            words = action.split()
            if words[1] == "cbr":
                bets, stacks, pot = before
                me = int(words[0][1:]) - 1
                to_call = max(bets) - bets[me]
                pot_raise_to = max(bets) + pot + to_call
                all_in_to = bets[me] + stacks[me]
                assert int(words[2]) in (pot_raise_to, all_in_to), (
                    f"hand {hh.hand}: {action!r} is neither the pot raise to {pot_raise_to} "
                    f"nor all-in to {all_in_to}"
                )
        before = (list(state.bets), list(state.stacks), state.total_pot_amount)
    assert applied == list(hh.actions), f"hand {hh.hand}: pokerkit did not apply every action as written"
    assert not state.status, f"hand {hh.hand}: pokerkit has the hand still running"
    return list(state.stacks)


def check_match_hands(tmp_path: pathlib.Path, a: str, b: str, seed: int) -> int:
    out = tmp_path / "match.phhs"
    report = armac_eval_json(
        "match", "--game", "hunl_fcpa", "--a", a, "--b", b, "--hands", "1000",
        "--seed", str(seed), "--hands-out", str(out),
    )
    assert report["hands_written"] == 1000
    hands = list(pokerkit.HandHistory.loads_all(out.read_text()))
    assert len(hands) == 1000
    assert report["a"] != report["b"]
    a_total, a_seat_total = 0, [0, 0]
    for n, hh in enumerate(hands, start=1):
        assert hh.variant == "NT" and hh.hand == n
        assert hh.blinds_or_straddles == [50, 100] and hh.starting_stacks == [20000, 20000]
        stacks = replay(hh)
        # armac's result of the hand, chip for chip.
        assert stacks == list(hh.finishing_stacks), f"hand {n}: pokerkit {stacks}, armac {hh.finishing_stacks}"
        assert sum(stacks) == sum(hh.starting_stacks)
        # Duplicate deals: A is OpenSpiel's player 0 (PHH's p1, the big blind) in odd hands.
        seat = 0 if n % 2 == 1 else 1
        assert hh.players[seat] == report["a"] and hh.players[1 - seat] == report["b"]
        won = stacks[seat] - hh.starting_stacks[seat]
        a_total += won
        a_seat_total[seat] += won
    # The report's means are the hands' results.
    assert a_total / 1000 == pytest.approx(report["mean_chips"], abs=1e-9)
    assert [t / 500 for t in a_seat_total] == pytest.approx(report["seat_mean_chips"], abs=1e-9)
    return len(hands)


def test_pokerkit_replays_every_hand_of_a_model_match(tmp_path):
    model = str(ROOT / "models" / "hunl_fcpa_armac")
    assert check_match_hands(tmp_path, model, "uniform", seed=3) == 1000


def test_pokerkit_replays_every_hand_of_uniform_against_always_call(tmp_path):
    assert check_match_hands(tmp_path, "uniform", "always-call", seed=5) == 1000


def test_hands_out_refuses_games_other_than_no_limit_holdem(tmp_path):
    import subprocess

    from conftest import armac_eval_path

    out = subprocess.run(
        [str(armac_eval_path()), "match", "--game", "leduc_poker", "--a", "uniform", "--b", "uniform",
         "--hands-out", str(tmp_path / "x.phhs")],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert out.returncode != 0
    assert "no-limit Texas hold'em" in out.stderr


def test_python_match_writes_the_same_hands_as_the_cli(tmp_path):
    import armac

    cli = tmp_path / "cli.phhs"
    armac_eval_json("match", "--a", "uniform", "--b", "always-call", "--hands", "40", "--seed", "9",
                    "--hands-out", str(cli))
    py = tmp_path / "py.phhs"
    r = armac.match("uniform", "always-call", hands=40, seed=9, hands_out=py)
    assert r["hands_written"] == 40
    assert py.read_text() == cli.read_text()


def test_pokerkit_replays_every_hand_lbr_plays(tmp_path):
    """`lbr --hands-out`: LBR's 1,000 hands against the shipped model, each replayed by pokerkit
    to armac's result; LBR's winnings over them are the reported mean."""
    out = tmp_path / "lbr.phhs"
    report = armac_eval_json(
        "lbr", "--policy", str(ROOT / "models" / "hunl_fcpa_armac"), "--variant", "fc12-fcpa34",
        "--hands", "1000", "--seed", "2", "--preflop-samples", "500", "--hands-out", str(out),
    )
    hands = list(pokerkit.HandHistory.loads_all(out.read_text()))
    assert len(hands) == report["hands"] == 1000
    lbr_total = 0
    for n, hh in enumerate(hands, start=1):
        stacks = replay(hh)
        assert stacks == list(hh.finishing_stacks), f"hand {n}: pokerkit {stacks}, armac {hh.finishing_stacks}"
        # Each deal is four hands: LBR as OpenSpiel's player 0 (PHH's p1), then player 1, ...
        seat = 0 if n % 2 == 1 else 1
        assert hh.players[seat] == "LBR-FC12-FCPA34" and hh.players[1 - seat] == report["policy"]
        lbr_total += stacks[seat] - hh.starting_stacks[seat]
    assert lbr_total / 1000 == pytest.approx(report["mean_chips"], abs=1e-9)


def test_pokerkit_replays_every_hand_of_a_scorecard(tmp_path):
    """`scorecard --hands-out`: every hand of every row (LBR against uniform, the matches, each
    column's LBR rows), replayed by pokerkit; each row's mean is its hands' result."""
    out = tmp_path / "card.phhs"
    card = armac_eval_json(
        "scorecard", "--policy", str(ROOT / "models" / "hunl_fcpa_armac"), "--hands", "100",
        "--match-hands", "1000", "--preflop-samples", "200", "--seed", "4", "--hands-out", str(out),
    )
    hands = list(pokerkit.HandHistory.loads_all(out.read_text()))
    columns = card["policies"]
    assert len(hands) == 3 * 100 + len(columns) * (2 * 1000 + 3 * 100)
    # Chips won per (player, opponent) pair, summed over the pair's hands in both seats.
    won: dict[tuple[str, str], list[int]] = {}
    for hh in hands:
        stacks = replay(hh)
        assert stacks == list(hh.finishing_stacks), f"hand {hh.hand}: pokerkit {stacks}, armac {hh.finishing_stacks}"
        for seat in (0, 1):
            key = (hh.players[seat], hh.players[1 - seat])
            won.setdefault(key, []).append(stacks[seat] - hh.starting_stacks[seat])

    def mbb(player: str, opponent: str, hands: int) -> float:
        chips = won[(player, opponent)]
        assert len(chips) == hands
        return 10 * sum(chips) / hands  # big blind 100 chips

    for variant, row in card["lbr_uniform"].items():
        assert mbb(f"LBR-{variant.upper()}", "uniform", 100) == pytest.approx(row["mean"], abs=1e-6)
    for column in columns.values():
        name = column["policy"]
        assert mbb(name, "uniform", 1000) == pytest.approx(column["vs_uniform"]["mean"], abs=1e-6)
        assert mbb(name, "always-call", 1000) == pytest.approx(column["vs_always_call"]["mean"], abs=1e-6)
        for variant, row in column["lbr"].items():
            assert mbb(f"LBR-{variant.upper()}", name, 100) == pytest.approx(row["mean"], abs=1e-6)

"""The module as Python users meet it: its version, what `dir(armac)` lists, OpenSpiel-shaped
answers of a table, and examples that run without open_spiel."""

import subprocess
import sys
import tomllib

import pytest

import armac
from conftest import ROOT


def test_version_is_the_packages():
    project = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]
    assert armac.__version__ == project["version"]


def test_dir_lists_the_api_and_no_imported_modules():
    names = dir(armac)
    for helper in ("np", "os", "json", "Any", "annotations"):
        assert helper not in names
    assert set(armac.__all__) <= set(names)
    assert {n for n in names if not n.startswith("__")} == set(armac.__all__)
    assert "__version__" in names


def test_tabular_policy_answers_a_dict_like_openspiel():
    policy = armac.solve("kuhn_poker", "cfr", iterations=50)
    state = armac.load_game("kuhn_poker").new_initial_state().child(0).child(1)
    probs = policy.action_probabilities(state)
    assert isinstance(probs, dict) and list(probs) == state.legal_actions()
    assert sum(probs.values()) == pytest.approx(1.0)
    assert dict(policy.table()[state.information_state_string()]) == pytest.approx(probs)
    pyspiel = pytest.importorskip("pyspiel")
    pstate = pyspiel.load_game("kuhn_poker").new_initial_state().child(0).child(1)
    assert policy.action_probabilities(pstate) == probs
    assert policy.to_openspiel(pyspiel.load_game("kuhn_poker")).action_probabilities(pstate) == pytest.approx(probs)
    with pytest.raises(armac.PolicyError):
        policy.action_probabilities(pyspiel.load_game("leduc_poker").new_initial_state().child(0).child(1))


# Runs a script as if open_spiel were not installed: `import pyspiel` and `import open_spiel...`
# raise ImportError.
WITHOUT_OPENSPIEL = (
    "import runpy, sys; sys.modules['pyspiel'] = None; sys.modules['open_spiel'] = None; "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "python" / "examples").glob("*.py")))
def test_examples_run_without_openspiel(example):
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_OPENSPIEL, str(ROOT / "python" / "examples" / example)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr

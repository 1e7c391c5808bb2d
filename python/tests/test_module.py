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


# A long match and a long LBR run in a child interpreter; once it has started, SIGINT must end
# it with KeyboardInterrupt within a few seconds (the library polls the interpreter's signals).
INTERRUPTED = """
import sys, armac
print("started", flush=True)
try:
    if sys.argv[1] == "match":
        armac.match("uniform", "uniform", game="leduc_poker", hands=10**9, sampled=True)
    else:
        armac.lbr("uniform", variant="fc", hands=10**9, threads=1)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
print("finished", flush=True)
"""


@pytest.mark.parametrize("call", ["match", "lbr"])
def test_ctrl_c_interrupts_a_long_evaluation(call):
    import signal
    import time

    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, call],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "started"
        # Well inside the call (10^9 hands take hours), past LBR's one-time table build.
        time.sleep(3.0 if call == "lbr" else 1.0)
        assert child.poll() is None, child.stderr.read()
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = child.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 3, (out, err)
    assert "KeyboardInterrupt" in out
    assert took < 4.0, f"{took:.1f} s after SIGINT"

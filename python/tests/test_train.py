"""armac.train: the run directory of armac-train, overrides, errors, and Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import armac
from conftest import ROOT

CONFIG = """
game = "kuhn_poker"
[solver]
algorithm = "cfr+"
iterations = {iterations}
[eval]
every = {every}
"""


def write_config(tmp_path, iterations=200, every=50):
    path = tmp_path / "kuhn_cfr.toml"
    path.write_text(CONFIG.format(iterations=iterations, every=every))
    return path


def test_train_writes_the_run_directory(tmp_path):
    out = tmp_path / "run"
    summary = armac.train(write_config(tmp_path), out=out, overrides={"solver.iterations": 120, "seed": 3})
    assert summary["iterations"] == 120 and not summary["stopped_early"]
    for name in ["config.toml", "metrics.csv", "summary.json", "policy.json"]:
        assert (out / name).is_file(), name
    stored = json.loads((out / "summary.json").read_text())
    assert stored["iterations"] == 120
    assert summary == stored  # the dict is the run's summary.json
    policy = armac.TabularPolicy.load(out / "policy.json")
    assert abs(armac.nash_conv("kuhn_poker", policy) - summary["nash_conv"]) < 1e-12
    with pytest.raises(FileExistsError, match="not empty"):
        armac.train(write_config(tmp_path), out=out)
    with pytest.raises(armac.ConfigError, match="solver.iterations"):
        armac.train(write_config(tmp_path), out=tmp_path / "other", overrides={"solver.iterations": "many"})
    with pytest.raises(FileNotFoundError, match="no_such_config"):
        armac.train("no_such_config.toml", out=tmp_path / "x")


def test_ctrl_c_stops_a_run_at_a_safe_point(tmp_path):
    out = tmp_path / "run"
    config = write_config(tmp_path, iterations=100_000_000, every=100_000_000)
    script = textwrap.dedent(
        f"""
        import signal, sys, armac
        print("started", flush=True)
        try:
            armac.train({str(config)!r}, out={str(out)!r}, overrides={{"game": "leduc_poker"}})
        except KeyboardInterrupt:
            # The interpreter's own handler is still in place after the run.
            print("interrupted", signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
            sys.exit(3)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    deadline = time.time() + 60
    while not (out / "metrics.csv").exists() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    sent = time.time()
    child.send_signal(signal.SIGINT)
    rest, _ = child.communicate(timeout=60)
    assert child.returncode == 3, rest
    assert rest.split() == ["interrupted", "True"]
    assert time.time() - sent < 30
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_early"] and 0 < summary["iterations"] < 100_000_000
    assert (out / "policy.json").is_file()


def test_a_run_over_the_memory_limit_raises_instead_of_aborting(tmp_path):
    # Under a 1.5 GB address space (RLIMIT_AS) the tiny Hold'em's history tree for stochastic
    # OMD (estimated at about 1.7 GB) is refused by the run's own estimate before anything is
    # built: the interpreter gets a ConfigError naming the key, the history count and the
    # limit, and the process exits normally (no allocation failure aborts it).
    out = tmp_path / "run"
    game = (
        "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=5 2,raiseSize=4 7,"
        "firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=2,numBoardCards=0 3,"
        "bettingAbstraction=fcpa)"
    )
    script = textwrap.dedent(
        f"""
        import resource, armac
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, resource.RLIM_INFINITY))
        try:
            armac.train({str(ROOT / "configs" / "leduc13_omd.toml")!r}, out={str(out)!r}, overrides={{"game": {game!r}}})
        except armac.ConfigError as e:
            print("ConfigError:", e, flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ConfigError:"), done.stdout + done.stderr
    for needle in ["`game`", "5645621 histories", "RLIMIT_AS"]:
        assert needle in done.stdout, done.stdout
    assert not out.exists()

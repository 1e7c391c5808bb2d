"""Shared helpers: the repository root and the `armac-eval` binary the tests compare with."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def armac_eval_path() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("ARMAC_EVAL", ROOT / "target" / "release" / "armac-eval"))
    if not path.is_file():
        pytest.skip(f"{path} is missing: run `cargo build --release` first (or set ARMAC_EVAL)")
    return path


def armac_eval_json(*args: str) -> dict:
    """Runs `armac-eval ARGS --json` from the repository root and parses its output."""
    out = subprocess.run(
        [str(armac_eval_path()), *args, "--json"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def hunl_model() -> pathlib.Path:
    return ROOT / "models" / "hunl_fcpa_armac"

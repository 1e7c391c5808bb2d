"""ONNX export of the shipped ARMAC models: ONNX's checker accepts every graph, and ONNX Runtime
gives the probabilities armac plays (`Model.action_probabilities_batch`) to 1e-5 on 1,000
information states of each model's game, for both heads and with thresholds that remove
actions (and, at 0.45, leave some rows with no action above it)."""

import json
import random
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import armac
from conftest import ROOT, armac_eval_path

MODELS = ["leduc_armac", "liars_dice_armac", "goofspiel5_armac", "hunl_fcpa_armac"]
STATES = 1000
TOLERANCE = 1e-5


def sample_states(game, count, seed):
    """Information-state tensors and legal masks of `count` decisions met in random games
    (chance outcomes drawn with their probabilities, players' actions uniformly)."""
    rng = random.Random(seed)
    n = game.num_distinct_actions()
    tensors, masks = [], []
    while len(tensors) < count:
        s = game.new_initial_state()
        while not s.is_terminal() and len(tensors) < count:
            if s.is_chance_node():
                outcomes = s.chance_outcomes()
                s.apply_action(rng.choices([a for a, _ in outcomes], [p for _, p in outcomes])[0])
                continue
            legal = s.legal_actions()
            tensors.append(np.asarray(s.information_state_tensor(), dtype=np.float32))
            mask = np.zeros(n, dtype=np.float32)
            mask[legal] = 1.0
            masks.append(mask)
            s.apply_action(rng.choice(legal))
    return np.stack(tensors), np.stack(masks)


def onnx_probabilities(data, tensors, masks):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (out,) = session.run(["probabilities"], {"info_state": tensors, "legal_mask": masks})
    return out


@pytest.mark.parametrize("name", MODELS)
def test_onnx_runtime_plays_what_armac_plays(name):
    path = ROOT / "models" / name
    game = armac.load_model(path).armac_game
    tensors, masks = sample_states(game, STATES, seed=MODELS.index(name))
    legal = masks > 0
    removed = fallback = 0
    report = {}
    for current in (False, True):
        head = "current" if current else "average"
        raw = armac.load_model(path, current=current, play_threshold=0.0).action_probabilities_batch(tensors, masks)
        for threshold in (None, 0.0, 0.1, 0.45):  # None: the model's own
            model = armac.load_model(path, current=current, play_threshold=threshold)
            data = model.to_onnx()
            proto = onnx.load_from_string(data)
            onnx.checker.check_model(proto, full_check=True)
            meta = {p.key: p.value for p in proto.metadata_props}
            assert meta["head"] == head
            expected = model.action_probabilities_batch(tensors, masks)
            got = onnx_probabilities(data, tensors, masks)
            assert got.shape == expected.shape == (STATES, game.num_distinct_actions())
            diff = float(np.max(np.abs(got - expected)))
            report[f"{head}@{meta['play_threshold']}"] = diff
            assert diff <= TOLERANCE, f"{name} {head}@{meta['play_threshold']}: max |onnxruntime - armac| = {diff}"
            assert np.all(got[~legal] == 0)
            t = float(meta["play_threshold"])
            # Legal actions the head plays and the threshold removes.
            removed += int(np.sum(legal & (raw > 0) & (expected == 0)))
            # Rows where no action reaches the threshold (armac then plays the likeliest alone).
            fallback += int(np.sum(np.max(raw, axis=1) < t))
    print(f"{name}: max |onnxruntime - armac| by head@threshold {json.dumps(report)}; "
          f"removed {removed}, no action above the threshold {fallback}")
    assert removed > 0, f"{name}: no state where the threshold removes an action"
    assert fallback > 0, f"{name}: no state where no action reaches the threshold"


def test_export_writes_what_the_command_line_writes(tmp_path):
    path = ROOT / "models" / "hunl_fcpa_armac"
    armac.export_onnx(path, tmp_path / "py.onnx", head="current", play_threshold=0.3)
    subprocess.run(
        [str(armac_eval_path()), "export-onnx", "--policy", str(path), "--head", "current",
         "--play-threshold", "0.3", "--out", str(tmp_path / "cli.onnx")],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "py.onnx").read_bytes() == (tmp_path / "cli.onnx").read_bytes()
    loaded = armac.load_model(path, current=True, play_threshold=0.3)
    armac.export_onnx(loaded, tmp_path / "model.onnx")
    assert (tmp_path / "model.onnx").read_bytes() == (tmp_path / "py.onnx").read_bytes()
    with pytest.raises(ValueError, match="load_model"):
        armac.export_onnx(loaded, tmp_path / "x.onnx", head="average")
    with pytest.raises(ValueError, match="head"):
        armac.export_onnx(path, tmp_path / "x.onnx", head="mean")
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        armac.load_model(path, play_threshold=1.0)

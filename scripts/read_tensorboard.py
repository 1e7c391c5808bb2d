#!/usr/bin/env python3
"""Reads the TensorBoard event files of a run directory back with the real `tensorboard`
package and prints {tag: [[step, value], ...]} as JSON. Used by the test suite to prove that our
event files are readable by TensorBoard; also handy for ad-hoc plots.

Usage: python3 scripts/read_tensorboard.py RUN_DIR"""
import json
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def read(run_dir):
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(json.dumps(read(sys.argv[1]), sort_keys=True))

#!/usr/bin/env python3
"""The decider slot head on the causal-row replica, in numpy (float64): an independent reference.

Written from the published ONNX contract of the decider exported with a slot head (the closest
peer's docs/families/decider.md in ollaya-dev/ollaya, "ONNX contract"): the graph takes one row per
scoring row and the index of its `(` slot, and gives

    label_logits[row, :] = h[slot] . E[label_ids]^T

where h is the final hidden state (after the last norm) and E the tied token embedding, restricted
to the rows of the 255 labels of decision.json (`labels.ids`). The trunk is the replica's, computed
by causal_forward.hidden_states (each row alone, unpadded); nothing here comes from Assay's
TypeScript.

    /usr/bin/python3 tools/families/decider-slots/decider_slots_forward.py MODEL_DIR < rows.json > logits.json

Input: {"rows": [{"ids": [...], "slot": i}, ...]}. Output: {"label_logits": [[255 floats], ...]}.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from causal_forward import hidden_states  # noqa: E402
from numpy_blocks import read_safetensors  # noqa: E402


def slot_logits(W, cfg, label_ids, row):
    ids = row["ids"]
    slot = row["slot"]
    if not 0 <= slot < len(ids):
        raise ValueError("slot %d outside a row of %d tokens" % (slot, len(ids)))
    h = hidden_states(W, cfg, ids)[slot]
    E = W["model.embed_tokens.weight"]
    return E[np.asarray(label_ids, dtype=np.int64)] @ h


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(folder, "decision.json")) as f:
        label_ids = json.load(f)["labels"]["ids"]
    W = read_safetensors(os.path.join(folder, "weights.safetensors"))
    job = json.load(sys.stdin)
    json.dump({"label_logits": [slot_logits(W, cfg, label_ids, r).tolist() for r in job["rows"]]}, sys.stdout)


if __name__ == "__main__":
    main()

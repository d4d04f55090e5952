#!/usr/bin/python3
"""The reference forward of the causal-row replicas on real trunks (tools/trunks/trunks.py +
heads.py), for their goldens: each row ALONE, UNPADDED, at its own length, in float64, with the
DeltaNet layers run as the token-by-token recurrence (not the chunked form the graph holds) and the
rotary tables in float32 as the architectures define them. Nothing here reads the exported graph
or Assay's TypeScript: the weights are drawn again from the spec's seed, and their digest is
returned so that a goldens file and a replica folder can be checked to hold the same ones.

The heads are checked here against the toy replicas' numpy references (tools/families/kit/
endpoint_forward.py's endpoint and slots, causal_forward.py's linear for the pointer head, the
tied-embedding product of decider_slots_forward.py), fed the same final hidden states: the heads on
the real trunks are the families' heads, only the trunk differs.

    /usr/bin/python3 tools/trunks/forward.py < job.json > out.json
job.json: {"spec": {... the replica's config.json: trunk, family, size, vocab, seed, storage,
                   labels?, head_dim?, head_mlp?, head_eps? ...},
           "rows": [{"ids": [...], "positions": {"decide_pos": i, "opt_pos": [j, ...]} ...}]}
out.json: {"digest": sha256, "outputs": [[...], ...]} (one list per row: the head's numbers).
"""
import json
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ beside the sources (the imports below are local)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "families", "kit"))
import heads  # noqa: E402
import trunks  # noqa: E402
from causal_forward import linear as np_linear  # noqa: E402
from endpoint_forward import endpoint as np_endpoint, slots as np_slots  # noqa: E402


def numpy_head(spec, W, h, positions, labels):
    """The same head's numbers from the toy replicas' numpy references (float64)."""
    fam = spec["family"]
    if fam == "kev":
        q = np_linear(W, "head.q", h[positions["decide_pos"]])
        k = np_linear(W, "head.k", h[np.asarray(positions["opt_pos"])])
        return (k @ q) / np.sqrt(trunks.KEV_HEAD_DIM)
    if fam == "decision":
        arch = {"eps": spec["head_eps"], "head_dim": spec["head_dim"]}
        return np_endpoint(W, arch, h, positions["query_pos"], positions["cand_pos"])
    if fam == "arbiter":
        return np_slots(W, h, positions["last_pos"])
    return W["model.embed_tokens.weight"][np.asarray(labels)] @ h[positions["slot_pos"]]


def numpy_weights(spec, model, w):
    """The head's weights under the names the numpy references read (and the tied embedding)."""
    W = {k[len("head."):] if spec["family"] == "decision" else k: v.astype(np.float64)
         for k, v in w.items() if k.startswith("head.")}
    if spec["family"] == "arbiter":
        W = {"head.weight": W["head.proj.weight"], "head.bias": W["head.proj.bias"]}
    W["model.embed_tokens.weight"] = w["model.embed_tokens.weight"].astype(np.float64)
    return W


def run(job):
    spec = job["spec"]
    model = heads.build_model(spec).eval()
    w = heads.weights(spec, model)
    trunks.load_weights(model, w, torch.float64)
    model.mode = "reference"
    W = numpy_weights(spec, model, w)
    outs = []
    worst = 0.0
    with torch.no_grad():
        for row in job["rows"]:
            ids = torch.tensor([row["ids"]], dtype=torch.int64)
            args = [torch.tensor([row["positions"][n]], dtype=torch.int64) for n, _ in model.head.positions]
            y = model(ids, *args)[0].numpy()
            last = args[0] if getattr(model.head, "mask_from", None) and spec["trunk"] == "gemma3" else None
            h = model.model(ids, "reference", last)[0].numpy()
            other = numpy_head(spec, W, h, row["positions"], spec.get("labels"))
            worst = max(worst, float(np.abs(np.asarray(other) - y).max()))
            outs.append(y.tolist())
    if worst > 1e-9:
        raise SystemExit("the torch head and the numpy reference head differ by %.3g" % worst)
    return {"digest": heads.digest(w), "outputs": outs}


def main():
    torch.set_num_threads(1)
    json.dump(run(json.load(sys.stdin)), sys.stdout)


if __name__ == "__main__":
    main()

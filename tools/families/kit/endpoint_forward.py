#!/usr/bin/env python3
"""An independent forward pass of the causal-row replicas of tools/families/kit/causal-net.ts
(decision-endpoint, arbiter-fixed), in numpy (float64), written from the architecture's description (docs/families/decision-endpoint.md,
"The replica"), not from the TypeScript graph builder. It reads the weights from the folder's
weights.safetensors (PyTorch names, Linear as [out, in]) and the shape from assay.json's
`architecture`:

    trunk   x = embed[id]; per layer: x += o(Attn(LN1(x))), x += down(gelu(up(LN2(x)))); h = LN(x)
            Attn: heads of q, k, v; softmax(q.k / sqrt(d)) over the keys j <= i (causal)
    endpoint head (Decision)
            c = LN_cand(h[cand_pos]), q = LN_query(h[query_pos])
            logits = (key(c) . query(q)) / sqrt(D) + scalar(gelu(cand_mlp(c) + query_mlp(q)))
    slots head (Arbiter)
            scores = head(h[last_pos])  (24 slots)

Each row is run on its own at its own length: no padding at all, so a graph whose right padding
leaked into the read positions would disagree.

    /usr/bin/python3 tools/families/kit/endpoint_forward.py MODEL_DIR < rows.json > out.json

Input: {"rows": [{"ids": [...], "query_pos": q, "cand_pos": [...]} or {"ids": [...], "last_pos": p}]}.
Output: {"outputs": [[...], ...]}, the head's numbers per row. Needs Debian's python3-numpy.
"""
import json
import math
import os
import sys

import numpy as np

from numpy_blocks import gelu, layer_norm, read_safetensors, softmax


def dense(W, name, x, bias=True):
    y = x @ W[name + ".weight"].T
    return y + W[name + ".bias"] if bias else y


def norm(W, name, x, eps):
    return layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)


def trunk(W, arch, ids):
    eps = arch["eps"]
    n_heads = arch["heads"]
    x = W["model.embed_tokens.weight"][np.asarray(ids, dtype=np.int64)]
    s, hidden = x.shape
    d = hidden // n_heads
    keep = np.tril(np.ones((s, s), dtype=bool))
    for i in range(arch["layers"]):
        p = "model.layers.%d." % i
        a = norm(W, p + "input_layernorm", x, eps)

        def by_head(t):
            return t.reshape(s, n_heads, d).transpose(1, 0, 2)

        q = by_head(dense(W, p + "self_attn.q_proj", a))
        k = by_head(dense(W, p + "self_attn.k_proj", a))
        v = by_head(dense(W, p + "self_attn.v_proj", a))
        scores = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(d)
        scores = np.where(keep[None], scores, -np.inf)
        ctx = np.einsum("hqk,hkd->hqd", softmax(scores), v).transpose(1, 0, 2).reshape(s, hidden)
        x = x + dense(W, p + "self_attn.o_proj", ctx)
        m = norm(W, p + "post_attention_layernorm", x, eps)
        x = x + dense(W, p + "mlp.down_proj", gelu(dense(W, p + "mlp.up_proj", m)))
    return norm(W, "model.norm", x, eps)


def endpoint(W, arch, h, query_pos, cand_pos):
    eps = arch["eps"]
    c = layer_norm(h[np.asarray(cand_pos)], W["cand_norm.weight"], W["cand_norm.bias"], eps)
    q = layer_norm(h[query_pos], W["query_norm.weight"], W["query_norm.bias"], eps)
    dot = dense(W, "key", c, False) @ dense(W, "query", q, False) / math.sqrt(arch["head_dim"])
    mixed = gelu(dense(W, "cand_mlp", c) + dense(W, "query_mlp", q, False))
    return dot + dense(W, "scalar", mixed, False)[:, 0]


def slots(W, h, last_pos):
    return dense(W, "head", h[last_pos])


def main():
    model_dir = sys.argv[1]
    W = read_safetensors(os.path.join(model_dir, "weights.safetensors"))
    with open(os.path.join(model_dir, "assay.json")) as f:
        arch = json.load(f)["architecture"]
    out = []
    for row in json.load(sys.stdin)["rows"]:
        h = trunk(W, arch, row["ids"])
        if arch["head"] == "endpoint":
            out.append(endpoint(W, arch, h, row["query_pos"], row["cand_pos"]).tolist())
        else:
            out.append(slots(W, h, row["last_pos"]).tolist())
    json.dump({"outputs": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An independent forward pass of the causal-row replicas (tools/families/kit/causal-replica-kit.ts), in
numpy (float64), with their gathered-position heads.

Written from the architecture's description (docs/families/kev-pointer.md, "The replica"), not from
the TypeScript graph builder. It reads the weights from the folder's weights.safetensors (PyTorch
names, Linear as [out, in]; the same values the graph holds in BF16) and the shape from config.json:

    embeddings  tok[id] + pos[j]                       (j = 0 .. len-1: each row unpadded)
    each layer  x += o(attention(LN1(x)))               causal: query i sees keys j <= i
                x += down(gelu(up(LN2(x))))             LayerNorm with weight and bias, exact GELU
    hidden      LN_f(x)
    heads       pointer: q = head.q(h[decide]), k_j = head.k(h[opt_j]), score_j = k_j . q / sqrt(dim)

Each row runs alone, at its own length: no padding, so a match with a padded batched graph shows
that right padding changes nothing.

    /usr/bin/python3 tools/families/kit/causal_forward.py MODEL_DIR < rows.json > scores.json

Input: {"rows": [{"ids": [...], "decide": i, "opts": [j, ...]}, ...]} (pointer head).
Output: {"scores": [[...], ...]}, one list per row (one score per option). Needs python3-numpy.
"""
import json
import math
import os
import sys

import numpy as np

from numpy_blocks import gelu, layer_norm, read_safetensors, softmax


def linear(W, name, x):
    y = x @ W[name + ".weight"].T
    bias = W.get(name + ".bias")
    return y if bias is None else y + bias


def norm(W, name, x, eps):
    return layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)


def attention(W, prefix, x, heads):
    """x: [s, hidden] -> [s, hidden], each query over the keys at or before it."""
    s, hidden = x.shape
    d = hidden // heads

    def by_head(t):
        return t.reshape(s, heads, d).transpose(1, 0, 2)

    q = by_head(linear(W, prefix + "q_proj", x))
    k = by_head(linear(W, prefix + "k_proj", x))
    v = by_head(linear(W, prefix + "v_proj", x))
    scores = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(d)
    future = np.triu(np.ones((s, s), dtype=bool), 1)
    scores = np.where(future[None], -np.inf, scores)
    out = np.einsum("hqk,hkd->hqd", softmax(scores), v)
    return linear(W, prefix + "o_proj", out.transpose(1, 0, 2).reshape(s, hidden))


def hidden_states(W, cfg, ids):
    """The final hidden states [len(ids), hidden] of one unpadded row."""
    eps = cfg["layer_norm_eps"]
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) > cfg["max_position_embeddings"]:
        raise ValueError("a row of %d tokens, the model has %d positions" % (len(ids), cfg["max_position_embeddings"]))
    x = W["model.embed_tokens.weight"][ids] + W["model.embed_positions.weight"][: len(ids)]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        x = x + attention(W, p + "self_attn.", norm(W, p + "input_layernorm", x, eps), cfg["num_attention_heads"])
        h = norm(W, p + "post_attention_layernorm", x, eps)
        x = x + linear(W, p + "mlp.down_proj", gelu(linear(W, p + "mlp.up_proj", h)))
    return norm(W, "model.norm", x, eps)


def pointer_scores(W, cfg, row):
    h = hidden_states(W, cfg, row["ids"])
    q = linear(W, "head.q", h[row["decide"]])
    k = linear(W, "head.k", h[np.asarray(row["opts"], dtype=np.int64)])
    return (k @ q) / math.sqrt(cfg["head"]["dim"])


HEADS = {"pointer": pointer_scores}


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    W = read_safetensors(os.path.join(folder, "weights.safetensors"))
    head = HEADS[cfg["head"]["type"]]
    job = json.load(sys.stdin)
    json.dump({"scores": [head(W, cfg, row).tolist() for row in job["rows"]]}, sys.stdout)


if __name__ == "__main__":
    main()

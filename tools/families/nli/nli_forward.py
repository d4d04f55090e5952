#!/usr/bin/env python3
"""An independent forward pass of the NLI replicas (both flavors), in numpy (float64).

Written from the architecture's description (docs/families/nli-pairs.md, "The replica": a
BERT-style cross-encoder), not from the TypeScript graph builder. It reads the weights from the
folder's weights.safetensors (PyTorch names, Linear as [out, in]) and the shape from config.json:

    embeddings  word[id] + position[j] (+ token_type[t] when the folder has that table) -> LayerNorm
    each layer  x = LN(x + Attention(x)),  x = LN(x + W2 . gelu(W1 . x))   (post-norm, biases)
                Attention: heads of q, k, v; softmax(q.k / sqrt(d)) over the keys whose
                attention_mask is 1 (the others get no weight at all)
    head        h = x at position 0; logits = classifier(gelu(pooler(h)))

    /usr/bin/python3 tools/families/nli/nli_forward.py MODEL_DIR < batch.json > logits.json

Input: one JSON object {"input_ids": [[...], ...], "attention_mask": [[...], ...],
"token_type_ids": [[...], ...]} (rows of one length; token_type_ids required exactly when the
model has a token type table). Output: {"logits": [[...], ...]}, one row of label columns per row.
Needs Debian's python3-numpy.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))  # the shared numpy blocks
from numpy_blocks import gelu, layer_norm, read_safetensors, softmax  # noqa: E402


def dense(W, name, x):
    return x @ W[name + ".weight"].T + W[name + ".bias"]


def norm(W, name, x, eps):
    return layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)


def self_attention(W, prefix, x, keep, n_heads):
    """x: [rows, s, hidden]; keep: [rows, s] bool (the keys that may be attended to)."""
    rows, s, hidden = x.shape
    d = hidden // n_heads

    def by_head(t):
        return t.reshape(rows, s, n_heads, d).transpose(0, 2, 1, 3)

    q = by_head(dense(W, prefix + "query", x))
    k = by_head(dense(W, prefix + "key", x))
    v = by_head(dense(W, prefix + "value", x))
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
    scores = np.where(keep[:, None, None, :], scores, -np.inf)
    out = np.einsum("bhqk,bhkd->bhqd", softmax(scores), v)
    return out.transpose(0, 2, 1, 3).reshape(rows, s, hidden)


def classify(W, cfg, ids, mask, types):
    eps = cfg.get("layer_norm_eps", cfg.get("norm_eps"))
    rows, s = ids.shape
    if s > cfg["max_position_embeddings"]:
        raise ValueError("rows of %d tokens, the model has %d positions" % (s, cfg["max_position_embeddings"]))
    if ids.max() >= cfg["vocab_size"] or ids.min() < 0:
        raise ValueError("a token id outside the vocabulary")
    has_types = "embeddings.token_type_embeddings.weight" in W
    if has_types != (types is not None):
        raise ValueError("token_type_ids given: %s; the model reads them: %s" % (types is not None, has_types))

    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][np.arange(s)]
    if has_types:
        x = x + W["embeddings.token_type_embeddings.weight"][types]
    x = norm(W, "embeddings.LayerNorm", x, eps)
    keep = mask.astype(bool)
    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        a = self_attention(W, p + "attention.self.", x, keep, cfg["num_attention_heads"])
        x = norm(W, p + "attention.output.LayerNorm", x + dense(W, p + "attention.output.dense", a), eps)
        ff = dense(W, p + "output.dense", gelu(dense(W, p + "intermediate.dense", x)))
        x = norm(W, p + "output.LayerNorm", x + ff, eps)
    pooled = gelu(dense(W, "pooler.dense", x[:, 0, :]))
    return dense(W, "classifier", pooled)


def main():
    model_dir = sys.argv[1]
    W = read_safetensors(os.path.join(model_dir, "weights.safetensors"))
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    batch = json.load(sys.stdin)
    ids = np.asarray(batch["input_ids"], dtype=np.int64)
    mask = np.asarray(batch["attention_mask"], dtype=np.int64)
    types = batch.get("token_type_ids")
    types = None if types is None else np.asarray(types, dtype=np.int64)
    logits = classify(W, cfg, ids, mask, types)
    json.dump({"logits": logits.tolist()}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An independent forward pass of the Laya replica, in numpy (float64).

Written from the architecture's description (docs/families/laya-markers.md, "The replica"; the
authors' DecisionModel over a ModernBERT encoder), not from the TypeScript graph builder. It reads
the weights from weights.safetensors (PyTorch names and orientation) and the encoder's shape from
config.json.

    /usr/bin/python3 tools/families/laya/laya_forward.py MODEL_DIR < rows.jsonl > out.jsonl

Each input line: {"ids": [...], "marker_pos": [...], "marker_mask": [true, ...], "qtype": 0}; the
row is run alone, unpadded. Each output line: {"logits": [...], "act_logits": [a, b]}.
Needs Debian's python3-numpy.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))  # the shared numpy blocks
from numpy_blocks import gelu, layer_norm, read_safetensors, softmax  # noqa: E402

MASKED = -1e4


def attention(q, k, v, allowed):
    """q, k, v: [heads, s, d]; allowed: [s, s] (query, key). Disallowed keys get no weight."""
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    scores = np.where(allowed[None], scores, -np.inf)
    return softmax(scores) @ v


def rotary(x, theta):
    """x: [heads, s, d], positions 0..s-1, the rotate-half form."""
    s, d = x.shape[1], x.shape[2]
    inv = 1.0 / theta ** (np.arange(0, d, 2) / d)
    ang = np.arange(s)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([ang, ang], -1))
    sin = np.sin(np.concatenate([ang, ang], -1))
    half = d // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def heads_of(x, n):
    s, hdim = x.shape
    return x.reshape(s, n, hdim // n).transpose(1, 0, 2)


def merge(x):
    n, s, d = x.shape
    return x.transpose(1, 0, 2).reshape(s, n * d)


def encoder(W, cfg, ids):
    """ModernBERT-like: embeddings + norm; layers of (pre-norm) rotary attention and GeGLU MLP."""
    s = len(ids)
    nh = cfg["num_attention_heads"]
    eps = cfg["norm_eps"]
    x = W["encoder.embeddings.tok_embeddings.weight"][np.asarray(ids)]
    x = layer_norm(x, W["encoder.embeddings.norm.weight"], eps=eps)
    pos = np.arange(s)
    near = np.abs(pos[:, None] - pos[None, :]) <= cfg["local_attention"] // 2
    everything = np.ones((s, s), dtype=bool)
    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layers.%d." % i
        is_global = i % cfg["global_attn_every_n_layers"] == 0
        theta = cfg["global_rope_theta"] if is_global else cfg["local_rope_theta"]
        h = x if i == 0 else layer_norm(x, W[p + "attn_norm.weight"], eps=eps)
        qkv = h @ W[p + "attn.Wqkv.weight"].T
        q, k, v = np.split(qkv, 3, axis=-1)
        q, k, v = heads_of(q, nh), heads_of(k, nh), heads_of(v, nh)
        a = attention(rotary(q, theta), rotary(k, theta), v, everything if is_global else near)
        x = x + merge(a) @ W[p + "attn.Wo.weight"].T
        m = layer_norm(x, W[p + "mlp_norm.weight"], eps=eps) @ W[p + "mlp.Wi.weight"].T
        inp, gate = np.split(m, 2, axis=-1)
        x = x + (gelu(inp) * gate) @ W[p + "mlp.Wo.weight"].T
    return layer_norm(x, W["encoder.final_norm.weight"], eps=eps)


def head(W, h, marker_pos, marker_mask, qtype, head_layers):
    """DecisionModel's head: type embedding, pre-norm transformer layers, scorer, act head."""
    d = h.shape[-1]
    nh = max(1, d // 64)
    s = h.shape[0]
    h = h + W["type_emb.weight"][qtype]
    everything = np.ones((s, s), dtype=bool)
    for i in range(head_layers):
        p = "head.layers.%d." % i
        a = layer_norm(h, W[p + "norm1.weight"], W[p + "norm1.bias"])
        qkv = a @ W[p + "self_attn.in_proj_weight"].T + W[p + "self_attn.in_proj_bias"]
        q, k, v = (heads_of(t, nh) for t in np.split(qkv, 3, axis=-1))
        att = merge(attention(q, k, v, everything))
        h = h + att @ W[p + "self_attn.out_proj.weight"].T + W[p + "self_attn.out_proj.bias"]
        f = layer_norm(h, W[p + "norm2.weight"], W[p + "norm2.bias"])
        ff = np.maximum(f @ W[p + "linear1.weight"].T + W[p + "linear1.bias"], 0.0)
        h = h + ff @ W[p + "linear2.weight"].T + W[p + "linear2.bias"]

    m = h[np.maximum(np.asarray(marker_pos, dtype=np.int64), 0)]
    z = layer_norm(m, W["scorer.0.weight"], W["scorer.0.bias"])
    z = gelu(z @ W["scorer.1.weight"].T + W["scorer.1.bias"])
    logits = (z @ W["scorer.3.weight"].T + W["scorer.3.bias"])[:, 0]
    mask = np.asarray(marker_mask, dtype=bool)
    logits = np.where(mask, logits, MASKED)

    p = softmax(logits)
    k = max(2.0, float(mask.sum()))
    ent = -(p * np.log(np.maximum(p, 1e-9))).sum() / math.log(k)
    top = sorted(p.tolist(), reverse=True) + [0.0]
    feats = np.array([top[0], top[0] - top[1], ent, k / 255.0])
    x = np.concatenate([h[0], feats])
    act = gelu(x @ W["act_head.0.weight"].T + W["act_head.0.bias"]) @ W["act_head.2.weight"].T + W["act_head.2.bias"]
    return logits, act


def main():
    model_dir = sys.argv[1]
    W = read_safetensors(os.path.join(model_dir, "weights.safetensors"))
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(model_dir, "rl_agent_config.json")) as f:
        head_layers = json.load(f).get("head_layers", 2)
    for line in sys.stdin:
        if not line.strip():
            continue
        row = json.loads(line)
        h = encoder(W, cfg, row["ids"])
        logits, act = head(W, h, row["marker_pos"], row["marker_mask"], row["qtype"], head_layers)
        sys.stdout.write(json.dumps({"logits": logits.tolist(), "act_logits": act.tolist()}) + "\n")


if __name__ == "__main__":
    main()

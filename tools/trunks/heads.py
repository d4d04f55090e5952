"""The causal-row families' heads on a trunk (tools/trunks/trunks.py), in torch: the same heads as the
toy replicas' (tools/families/<family>/replica.ts for kev, decision, decider-slots and arbiter;
their numpy references tools/families/kit/causal_forward.py and endpoint_forward.py,
tools/families/decider-slots/decider_slots_forward.py), so that only the trunk differs. Each gathers the
final hidden states at the family's position inputs, as the published whole-row graphs do:

  kev            decide_pos i64[rows], opt_pos i64[rows, k] -> scores [rows, k]
                 = head.k(h[opt]) . head.q(h[decide]) / 16, two Linear(hidden -> 256) with biases
  decision       query_pos i64[rows], cand_pos i64[rows, k] -> logits [rows, k]
                 c = LN_cand(h[cand]), q = LN_query(h[query]);
                 key(c) . query(q) / sqrt(D) + scalar(gelu(cand_mlp(c) + query_mlp(q)))
  decider-slots  slot_pos i64[rows] -> label_logits [rows, 255] = h[slot] . E[label_ids]ᵀ (E tied)
  arbiter        last_pos i64[rows] -> scores [rows, 24] = Linear(hidden, 24)(h[last])

A spec (the replica folder's config.json) names the trunk, its size, the family, the seed and the
storage; build_model(spec) makes the module and weights(spec, model) its weights.
"""
import hashlib
import math

import numpy as np

import torch
import torch.nn.functional as F
from torch import nn

import trunks


def at_positions(h, pos):
    """The hidden states [rows, T, H] at `pos` (i64[rows] -> [rows, H]; i64[rows, k] -> [rows, k, H]):
    one Gather on the flattened rows, row r's positions offset by r·T (the toy replicas' gather)."""
    B, T, H = h.shape
    offsets = torch.arange(B, device=h.device) * T
    return h.reshape(-1, H)[pos + (offsets if pos.dim() == 1 else offsets[:, None])]


def _linear_init(fan_in, gain=1.0):
    return dict(std=gain / math.sqrt(fan_in))


class PointerHead(nn.Module):
    positions = [("decide_pos", 1), ("opt_pos", "k")]
    output = ("scores", "k")

    def __init__(self, H, spec):
        super().__init__()
        self.H = H
        self.q = nn.Linear(H, trunks.KEV_HEAD_DIM)
        self.k = nn.Linear(H, trunks.KEV_HEAD_DIM)

    def init(self, name, shape):
        return dict(std=0.1) if name.endswith("bias") else _linear_init(self.H)

    def forward(self, h, embed, decide_pos, opt_pos):
        q = self.q(at_positions(h, decide_pos))  # [rows, 256]
        k = self.k(at_positions(h, opt_pos))  # [rows, k, 256]
        return (k @ q[:, :, None])[..., 0] / math.sqrt(trunks.KEV_HEAD_DIM)


class EndpointHead(nn.Module):
    positions = [("query_pos", 1), ("cand_pos", "k")]
    output = ("logits", "k")

    def __init__(self, H, spec):
        super().__init__()
        D, M = spec["head_dim"], spec["head_mlp"]
        self.H, self.D, self.M = H, D, M
        eps = spec["head_eps"]
        self.cand_norm = nn.LayerNorm(H, eps=eps)
        self.query_norm = nn.LayerNorm(H, eps=eps)
        self.key = nn.Linear(H, D, bias=False)
        self.query = nn.Linear(H, D, bias=False)
        self.cand_mlp = nn.Linear(H, M)
        self.query_mlp = nn.Linear(H, M, bias=False)
        self.scalar = nn.Linear(M, 1, bias=False)

    def init(self, name, shape):
        if "norm" in name:
            return dict(std=0.1, mean=1.0 if name.endswith("weight") else 0.0)
        if name.endswith("bias"):
            return dict(std=0.1)
        if ".key." in name or ".query." in name:
            return _linear_init(self.H, 2.0)
        if ".scalar." in name:
            return _linear_init(self.M, 2.0)
        return _linear_init(self.H)

    def forward(self, h, embed, query_pos, cand_pos):
        c = self.cand_norm(at_positions(h, cand_pos))  # [rows, k, H]
        q = self.query_norm(at_positions(h, query_pos))  # [rows, H]
        dot = (self.key(c) @ self.query(q)[:, :, None])[..., 0] / math.sqrt(self.D)
        mixed = F.gelu(self.cand_mlp(c) + self.query_mlp(q)[:, None, :])
        return dot + self.scalar(mixed)[..., 0]


class SlotHead(nn.Module):
    positions = [("slot_pos", 1)]
    output = ("label_logits", 255)

    def __init__(self, H, spec):
        super().__init__()
        self.register_buffer("label_ids", torch.tensor(spec["labels"], dtype=torch.int64), persistent=False)

    def init(self, name, shape):
        return None

    def forward(self, h, embed, slot_pos):
        return at_positions(h, slot_pos) @ embed[self.label_ids].transpose(0, 1)


class FixedHead(nn.Module):
    positions = [("last_pos", 1)]
    output = ("scores", 24)
    mask_from = "last_pos"

    def __init__(self, H, spec):
        super().__init__()
        self.H = H
        self.proj = nn.Linear(H, 24)

    def init(self, name, shape):
        return dict(std=0.1) if name.endswith("bias") else _linear_init(self.H, 3.0)

    def forward(self, h, embed, last_pos):
        return self.proj(at_positions(h, last_pos))


HEADS = {"kev": PointerHead, "decision": EndpointHead, "decider-slots": SlotHead, "arbiter": FixedHead}


class RowModel(nn.Module):
    """input_ids i64[rows, seq] and the family's positions -> the head's output. `mode`: 'export' (the
    graph; rows a multiple of 64 on the hybrid trunk) or 'reference' (one row alone, unpadded)."""

    def __init__(self, trunk, head):
        super().__init__()
        self.model = trunk
        self.head = head
        self.mode = "export"

    def forward(self, input_ids, *positions):
        # Gemma 3 with the Arbiter head builds its padding mask from last_pos, as the published export does.
        last = positions[0] if getattr(self.head, "mask_from", None) and self.model.s["kind"] == "gemma3" else None
        h = self.model(input_ids, self.mode, last)
        return self.head(h, self.model.embed_tokens.weight, *positions)


def build_model(spec):
    s = trunks.shape_of(spec["trunk"], spec["size"], spec["vocab"])
    trunk = trunks.trunk_of(spec["trunk"], s, spec.get("conv_padding", "symmetric-slice"))
    return RowModel(trunk, HEADS[spec["family"]](s["hidden"], spec))


def weights(spec, model, keep=True):
    """The replica's weights (seeded; matrices BF16-rounded when the spec stores BF16), drawn as asked
    for; `keep`: each kept once drawn (a tiny replica), else drawn again when asked again (a base's size)."""
    return trunks.Weights(model, spec["seed"], spec["storage"] == "bf16", keep)


def tensor_hash(name, a):
    """One weight's sha256: its name, shape and float32 bytes."""
    h = hashlib.sha256(("%s %s\n" % (name, list(a.shape))).encode())
    h.update(np.ascontiguousarray(a, dtype="<f4").tobytes())
    return h.hexdigest()


def digest(w, hashes=None):
    """sha256 over every weight's tensor_hash, in name order (`hashes`: those already known): what
    goldens and a replica folder must agree on."""
    hashes = dict(hashes or {})
    h = hashlib.sha256()
    for name in sorted(w):
        h.update((hashes.get(name) or tensor_hash(name, w[name])).encode())
    return h.hexdigest()

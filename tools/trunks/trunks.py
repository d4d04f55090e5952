"""The causal-row families' trunks in the real architectures, as torch modules (development only,
never packed): what tools/trunks/export.py exports as whole-row graphs and tools/trunks/forward.py
runs as the goldens' reference. Written from the public modelling code of each architecture
(Hugging Face transformers' Qwen3, Qwen3-Next / Qwen3.5 and Gemma 3 modules, read to learn) and the
closest peer's export-friendly forwards (ollaya-dev/ollaya convert/.../llm_common/qwen3.py and
qwen35.py: explicit causal bias, positions 0..T-1, the chunked gated delta rule as a Scan over
64-token chunks from a zero state); docs/families/trunks.md says what mirrors them and what differs.

  qwen3    attention only: RMSNorm (weight), rotary on the whole head (rope_theta), GQA with
           per-head q/k RMSNorm, SwiGLU MLP, tied embeddings.
  qwen35   Qwen3.5 hybrid: Gated DeltaNet layers beside gated full-attention layers (a full layer
           every `full_every`), RMSNorm (1 + weight), partial rotary, the attention's sigmoid
           output gate; DeltaNet: in_proj_qkv -> depthwise causal conv1d (zero left padding) ->
           SiLU, l2-normed q/k, beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias), the
           gated delta rule, gated RMSNorm with silu(z), out_proj.
  gemma3   Gemma 3: embeddings times sqrt(hidden), sliding-window local layers beside global ones
           (a global layer every `global_every`), rope theta per kind, q/k RMSNorm, sandwich norms
           (pre and post of attention and MLP), GeGLU (gelu tanh), RMSNorm (1 + weight).

Modes of a trunk's forward:
  'export'     what the graph holds: rows right-padded to a multiple of 64; the DeltaNet recurrence
               chunked (64 tokens) with the inter-chunk step in ChunkScan, which export.py turns into
               an ONNX Scan; run eagerly it is the torch module the exported graph is checked against.
  'reference'  the goldens' reference: one row alone, unpadded, any length; the DeltaNet layers run
               the token-by-token recurrence (the delta rule as defined, no chunks), so the chunked
               form is checked against another algorithm, not against itself.
The rotary tables are computed in float32 in both modes, as the architectures define them
(transformers computes inv_freq and the angles in float32 whatever the model's dtype).
"""
import math
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CHUNK = 64
KEV_HEAD_DIM = 256


# ------------------------------------------------------------------ shapes

TINY = {
    # hidden 32 like the toy replicas; q heads x head_dim != hidden, as in Qwen3 (0.6B: 16 x 128 vs 1,024)
    "qwen3": dict(hidden=32, layers=3, heads=4, kv_heads=2, head_dim=16, intermediate=64,
                  rope_theta=1_000_000.0, eps=1e-6),
    # three DeltaNet layers and a full-attention one (Qwen3.5's 3 : 1)
    "qwen35": dict(hidden=32, layers=4, full_every=4, heads=4, kv_heads=2, head_dim=16,
                   partial_rotary=0.25, rope_theta=10_000_000.0, lin_k_heads=2, lin_v_heads=4,
                   lin_k_dim=16, lin_v_dim=16, conv_kernel=4, intermediate=64, eps=1e-6),
    # five local layers and a global one; window 32 so that a 300-token state spans many windows
    "gemma3": dict(hidden=32, layers=6, global_every=6, heads=4, kv_heads=2, head_dim=16,
                   query_pre_attn_scalar=16, sliding_window=32, rope_local_theta=10_000.0,
                   rope_theta=1_000_000.0, rope_global_factor=8.0, intermediate=64, eps=1e-6),
}

SIZED = {
    # Qwen2.5-0.5B's dimensions on the Qwen3 architecture (hidden 896, 24 layers, 14 heads, 2 KV
    # heads of 64, SwiGLU 4,864)
    "0.5b": {"qwen3": dict(hidden=896, layers=24, heads=14, kv_heads=2, head_dim=64, intermediate=4864,
                           rope_theta=1_000_000.0, eps=1e-6)},
    # Qwen3.5-0.8B's (hidden 1,024, 24 layers, 6 DeltaNet : 2 full per 8, 8 heads / 2 KV of 256,
    # partial rotary 0.25, 16 DeltaNet heads of 128, conv 4, SwiGLU 3,584)
    "0.8b": {"qwen35": dict(hidden=1024, layers=24, full_every=4, heads=8, kv_heads=2, head_dim=256,
                            partial_rotary=0.25, rope_theta=10_000_000.0, lin_k_heads=16, lin_v_heads=16,
                            lin_k_dim=128, lin_v_dim=128, conv_kernel=4, intermediate=3584, eps=1e-6)},
}


def shape_of(trunk, size, vocab):
    """A trunk's shape: `size` 'tiny', or a base's size ('0.5b', '0.8b'; the other trunk kind takes
    the same hidden size, layers and widths as far as they apply)."""
    if size == "tiny":
        s = dict(TINY[trunk])
    else:
        (kind, dims), = SIZED[size].items()
        s = dict(dims) if kind == trunk else _carry(dims, trunk)
    s["vocab"] = vocab
    return s


def _carry(dims, trunk):
    """A base's dimensions on another trunk kind."""
    base = {k: dims[k] for k in ("hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate", "eps")}
    if trunk == "qwen3":
        return dict(base, rope_theta=1_000_000.0)
    if trunk == "qwen35":
        hd = base["hidden"] // 8
        return dict(base, full_every=4, partial_rotary=0.25, rope_theta=10_000_000.0, lin_k_heads=16,
                    lin_v_heads=16, lin_k_dim=hd, lin_v_dim=hd, conv_kernel=4)
    return dict(base, global_every=6, query_pre_attn_scalar=base["head_dim"], sliding_window=1024,
                rope_local_theta=10_000.0, rope_theta=1_000_000.0, rope_global_factor=8.0)


# ------------------------------------------------------------------ seeded weights

def bf16_round(a):
    """Finite float32 values rounded to the nearest BF16 (ties to even), as float32 (in place when
    `a` is a float32 array: a base's embedding is not copied)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32)
    u += np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))  # no finite value overflows
    u &= np.uint32(0xFFFF0000)
    return a


def draw(seed, name, shape, spec):
    """A weight's values: numpy's legacy RandomState (its streams are frozen across numpy versions),
    seeded by the replica's seed and the weight's name; normal (std, mean) or uniform; float32."""
    rs = np.random.RandomState((seed * 1_000_003 + zlib.crc32(name.encode())) % (2 ** 32))
    if "uniform" in spec:
        return rs.uniform(*spec["uniform"], size=shape).astype(np.float32)
    # drawn in slices (one stream: the same values as one call), so that a base's embedding never
    # exists in float64 whole
    out = np.empty(int(np.prod(shape)), dtype=np.float32)
    step = 1 << 24
    for at in range(0, out.size, step):
        n = min(step, out.size - at)
        out[at:at + n] = rs.standard_normal(size=n) * spec["std"] + spec.get("mean", 0.0)
    return out.reshape(shape)


def init_of(name, shape, s):
    """How each weight is drawn (std, mean, or a uniform range): small enough that fp32 and float64
    agree to ~1e-6 through the trunk, large enough that every layer and position matters."""
    last = name.rsplit(".", 2)
    leaf = ".".join(last[-2:])
    if name.endswith("embed_tokens.weight"):
        return dict(std=1.0 / math.sqrt(s["hidden"]) if s.get("kind") == "gemma3" else 1.0)
    if name.endswith("A_log"):  # log A uniform in [log 0.002, log 0.1]: per-token decays from ~0.93 to ~1
        return dict(uniform=(math.log(0.002), math.log(0.1)))
    if name.endswith("dt_bias"):
        return dict(std=0.5)
    if name.endswith("conv1d.weight"):
        return dict(std=0.5)
    if "norm" in leaf and name.endswith("weight"):
        # (1 + w) norms draw w around 0; plain-weight norms (Qwen3, the gated norm) around 1
        plain = s.get("kind") == "qwen3" or name.endswith("linear_attn.norm.weight")
        return dict(std=0.1, mean=1.0 if plain else 0.0)
    if name.endswith(".bias"):
        return dict(std=0.1)
    fan_in = shape[-1]
    return dict(std=1.0 / math.sqrt(fan_in))


class Weights:
    """Every parameter of `model` drawn (init_of, a head's own `init` first), matrices rounded to BF16
    when `bf16`; a mapping name -> float32 array, each drawn when asked for (`keep`: and kept)."""

    def __init__(self, model, seed, bf16, keep=True):
        self.shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
        self.model, self.seed, self.bf16 = model, seed, bf16
        self.kept = {} if keep else None

    def __iter__(self):
        return iter(self.shapes)

    def __len__(self):
        return len(self.shapes)

    def __getitem__(self, name):
        if self.kept is not None and name in self.kept:
            return self.kept[name]
        shape = self.shapes[name]
        spec = self.model.head.init(name, shape) if name.startswith("head.") else None
        v = draw(self.seed, name, shape, spec or init_of(name, shape, self.model.model.s))
        v = bf16_round(v) if self.bf16 and len(shape) >= 2 else v
        if self.kept is not None:
            self.kept[name] = v
        return v

    def items(self):
        return ((name, self[name]) for name in self.shapes)

    def values(self):
        return (self[name] for name in self.shapes)


def load_weights(model, weights, dtype):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(weights[name]).to(p.dtype))
    return model.to(dtype)


# ------------------------------------------------------------------ blocks

class RMSNorm(nn.Module):
    """x / rms(x) times weight (Qwen3) or times (1 + weight) (Qwen3.5, Gemma 3)."""

    def __init__(self, dim, eps, offset):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps
        self.offset = offset

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return y * (self.weight + 1.0) if self.offset else y * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rotary_tables(T, theta, dim, factor, dtype):
    """cos, sin [T, dim] of positions 0..T-1, computed in float32 (the architectures' definition);
    `factor`: linear position scaling (Gemma 3's global layers)."""
    inv_freq = inv_freq_of(theta, dim, factor)
    pos = torch.arange(T, dtype=torch.int64).float()
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotary_graph(input_ids, inv_freq, dtype):
    """The same tables from the row length in the graph (Range over seq, times inv_freq, Cos / Sin)."""
    T = input_ids.shape[1]
    pos = torch.arange(T, device=input_ids.device, dtype=torch.float32)
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotary(input_ids, mode, inv_freq, theta, dim, factor, dtype):
    """cos, sin of positions 0..T-1: from the row length in the graph ('export'), or as the
    architecture defines them ('reference'); equal, both float32."""
    if mode == "export":
        return rotary_graph(input_ids, inv_freq, dtype)
    return rotary_tables(input_ids.shape[1], theta, dim, factor, dtype)


def inv_freq_of(theta, dim, factor=1.0):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    return inv / factor if factor != 1.0 else inv


def repeat_kv(x, rep):
    """[B, kv, T, d] -> [B, kv * rep, T, d], each head repeated `rep` times in a row (expand + reshape)."""
    if rep == 1:
        return x
    B, kv, T, d = x.shape
    return x[:, :, None].expand(B, kv, rep, T, d).reshape(B, kv * rep, T, d)


def attend(q, k, v, bias, scaling):
    w = (q @ k.transpose(-1, -2)) * scaling + bias
    return torch.softmax(w, dim=-1) @ v


class SwiGLU(nn.Module):
    def __init__(self, hidden, inter, act):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.act = act

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Attention(nn.Module):
    """q/k/v projections (q doubled with a gate when `gated`), per-head q/k RMSNorm, rotary on the
    first `rot` channels of each head, GQA, softmax(q kᵀ · scaling + bias) v, o_proj."""

    def __init__(self, s, offset, gated, rot=None):
        super().__init__()
        H, hd = s["hidden"], s["head_dim"]
        self.heads, self.kv, self.hd, self.gated = s["heads"], s["kv_heads"], hd, gated
        self.rot = rot or hd
        self.q_proj = nn.Linear(H, s["heads"] * hd * (2 if gated else 1), bias=False)
        self.k_proj = nn.Linear(H, s["kv_heads"] * hd, bias=False)
        self.v_proj = nn.Linear(H, s["kv_heads"] * hd, bias=False)
        self.o_proj = nn.Linear(s["heads"] * hd, H, bias=False)
        self.q_norm = RMSNorm(hd, s["eps"], offset)
        self.k_norm = RMSNorm(hd, s["eps"], offset)

    def forward(self, h, cos, sin, bias, scaling):
        B, T, _ = h.shape
        hd = self.hd
        if self.gated:
            q, gate = torch.chunk(self.q_proj(h).view(B, T, -1, hd * 2), 2, dim=-1)
            gate = gate.reshape(B, T, -1)
        else:
            q = self.q_proj(h).view(B, T, -1, hd)
        q = self.q_norm(q).transpose(1, 2)
        k = self.k_norm(self.k_proj(h).view(B, T, -1, hd)).transpose(1, 2)
        v = self.v_proj(h).view(B, T, -1, hd).transpose(1, 2)
        rd = self.rot
        if rd == hd:
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        else:
            q = torch.cat([q[..., :rd] * cos + rotate_half(q[..., :rd]) * sin, q[..., rd:]], dim=-1)
            k = torch.cat([k[..., :rd] * cos + rotate_half(k[..., :rd]) * sin, k[..., rd:]], dim=-1)
        rep = self.heads // self.kv
        o = attend(q, repeat_kv(k, rep), repeat_kv(v, rep), bias, scaling)
        o = o.transpose(1, 2).reshape(B, T, -1)
        if self.gated:
            o = o * torch.sigmoid(gate)
        return self.o_proj(o)


def causal_bias(T, dtype, device=None):
    """The fixed causal bias [T, T]: 0 at and below the diagonal, -inf above (the peer's trunks)."""
    return torch.full((T, T), float("-inf"), dtype=dtype, device=device).triu(1)


# ------------------------------------------------------------------ Qwen3 (attention only)

class Qwen3Layer(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.input_layernorm = RMSNorm(s["hidden"], s["eps"], False)
        self.self_attn = Attention(s, False, False)
        self.post_attention_layernorm = RMSNorm(s["hidden"], s["eps"], False)
        self.mlp = SwiGLU(s["hidden"], s["intermediate"], F.silu)

    def forward(self, x, cos, sin, bias, scaling):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, bias, scaling)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Trunk(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = dict(s, kind="qwen3")
        self.embed_tokens = nn.Embedding(s["vocab"], s["hidden"])
        self.layers = nn.ModuleList([Qwen3Layer(s) for _ in range(s["layers"])])
        self.norm = RMSNorm(s["hidden"], s["eps"], False)
        self.register_buffer("inv_freq", inv_freq_of(s["rope_theta"], s["head_dim"]), persistent=False)

    def forward(self, input_ids, mode="export", last=None):
        x = self.embed_tokens(input_ids)
        T = input_ids.shape[1]
        cos, sin = rotary(input_ids, mode, self.inv_freq, self.s["rope_theta"], self.s["head_dim"], 1.0, x.dtype)
        bias = causal_bias(T, x.dtype, x.device)
        scaling = self.s["head_dim"] ** -0.5
        for layer in self.layers:
            x = layer(x, cos, sin, bias, scaling)
        return self.norm(x)


# ------------------------------------------------------------------ Qwen3.5 (hybrid, Gated DeltaNet)

def l2norm(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def doubling_masks(c):
    """[log2 c, c, c]: level l keeps, inside each diagonal block of 2s (s = 2^l), its lower-left s x s block."""
    i = torch.arange(c)
    out, s = [], 1
    while s < c:
        same = (i[:, None] // (2 * s)) == (i[None, :] // (2 * s))
        lower_left = ((i[:, None] % (2 * s)) >= s) & ((i[None, :] % (2 * s)) < s)
        out.append((same & lower_left).float())
        s *= 2
    return torch.stack(out)


def unit_lower_inverse(strict_lower, masks):
    """(I + A)^-1 for a strictly lower-triangular A [..., c, c], by block doubling (log2 c masked
    matmul levels; exact in real arithmetic), as the peer's export computes the UT transform."""
    c = strict_lower.shape[-1]
    x = torch.eye(c, dtype=strict_lower.dtype).expand_as(strict_lower)
    for level in range(masks.shape[0]):
        x = x - x @ (strict_lower * masks[level]) @ x
    return x


def chunk_step(state, new_v, k_cumdecay, q, intra, k, chunk_decay):
    """One chunk of the gated delta rule from `state` [B, H, dk, dv]: the chunk's output and the next state."""
    v_new = new_v - k_cumdecay @ state
    out = q @ state + intra @ v_new
    state = state * chunk_decay + k.transpose(-1, -2) @ v_new
    return state, out


class ChunkStep(nn.Module):
    """chunk_step as a module: the body export.py exports and puts in the Scan."""

    def forward(self, state, new_v, k_cumdecay, q, intra, k, chunk_decay):
        return chunk_step(state, new_v, k_cumdecay, q, intra, k, chunk_decay)


class ChunkScan(torch.autograd.Function):
    """The inter-chunk recurrence: state0 and the per-chunk inputs stacked on axis 0 -> the stacked
    chunk outputs. Eager: a loop over chunks. Exported: one `assay.trunks::ChunkScan` node, which
    export.py replaces with an ONNX Scan whose body is ChunkStep's own export."""

    @staticmethod
    def forward(ctx, state0, new_v, k_cumdecay, q, intra, k, chunk_decay):
        state, outs = state0, []
        for i in range(new_v.shape[0]):
            state, out = chunk_step(state, new_v[i], k_cumdecay[i], q[i], intra[i], k[i], chunk_decay[i])
            outs.append(out)
        return torch.stack(outs)

    @staticmethod
    def symbolic(g, state0, new_v, k_cumdecay, q, intra, k, chunk_decay):
        out = g.op("assay.trunks::ChunkScan", state0, new_v, k_cumdecay, q, intra, k, chunk_decay)
        out.setType(new_v.type())
        return out


def gated_delta_chunked(q, k, v, g, beta, masks, strict_upper):
    """transformers' torch_chunk_gated_delta_rule (use_qk_l2norm_in_kernel, no initial state) as the
    peer exports it: T a multiple of 64, the intra-chunk UT transform by block doubling, the
    inter-chunk recurrence in ChunkScan from a zero state. q, k [B,T,H,dk]; v [B,T,H,dv]; g, beta [B,T,H]."""
    q, k, v, beta, g = [x.transpose(1, 2) for x in (q, k, v, beta, g)]
    q = l2norm(q)
    k = l2norm(k)
    q = q * (q.shape[-1] ** -0.5)
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    v_beta = v * beta.unsqueeze(-1)
    k_beta = k * beta.unsqueeze(-1)
    q, k, k_beta, v_beta = (x.reshape(B, H, -1, CHUNK, x.shape[-1]) for x in (q, k, k_beta, v_beta))
    g = g.reshape(B, H, -1, CHUNK)
    cum = g.cumsum(dim=-1)
    pair = (cum.unsqueeze(-1) - cum.unsqueeze(-2)).masked_fill(strict_upper, float("-inf")).exp()
    ut = (k_beta @ k.transpose(-1, -2)) * pair
    intra = (q @ k.transpose(-1, -2)) * pair
    decayed_k_beta = k_beta * cum.exp().unsqueeze(-1)
    inv = unit_lower_inverse(ut.masked_fill(~strict_upper.transpose(0, 1), 0.0), masks)
    new_v = inv @ v_beta
    k_cumdecay = inv @ decayed_k_beta
    q = q * cum.exp().unsqueeze(-1)
    k = k * (cum[..., -1:] - cum).exp().unsqueeze(-1)
    chunk_decay = cum[..., -1].exp()[..., None, None]
    xs = [x.movedim(2, 0) for x in (new_v, k_cumdecay, q, intra, k, chunk_decay)]
    state0 = q.new_zeros((B, H, dk, dv))
    out = ChunkScan.apply(state0, *xs)  # [N, B, H, CHUNK, dv]
    out = out.movedim(0, 2).reshape(B, H, T, dv)
    return out.transpose(1, 2)


def gated_delta_recurrent(q, k, v, g, beta):
    """The gated delta rule token by token (transformers' torch_recurrent_gated_delta_rule), from a
    zero state: S_t = S_{t-1} e^{g_t} + k_t (beta_t (v_t - S_{t-1} e^{g_t} k_t))ᵀ, o_t = S_tᵀ q_t."""
    q, k, v, beta, g = [x.transpose(1, 2) for x in (q, k, v, beta, g)]
    q = l2norm(q) * (q.shape[-1] ** -0.5)
    k = l2norm(k)
    B, H, T, dk = k.shape
    state = q.new_zeros((B, H, dk, v.shape[-1]))
    outs = []
    for t in range(T):
        state = state * g[:, :, t].exp()[..., None, None]
        kv = (state * k[:, :, t, :, None]).sum(dim=-2)
        delta = (v[:, :, t] - kv) * beta[:, :, t, None]
        state = state + k[:, :, t, :, None] * delta[:, :, None, :]
        outs.append((state * q[:, :, t, :, None]).sum(dim=-2))
    return torch.stack(outs, dim=2).transpose(1, 2)


class GatedRMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x, z):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y * F.silu(z)


class GatedDeltaNet(nn.Module):
    def __init__(self, s, conv_padding):
        super().__init__()
        H = s["hidden"]
        self.kh, self.vh, self.dk, self.dv = s["lin_k_heads"], s["lin_v_heads"], s["lin_k_dim"], s["lin_v_dim"]
        self.key_dim, self.value_dim = self.kh * self.dk, self.vh * self.dv
        self.K = s["conv_kernel"]
        self.conv_padding = conv_padding
        conv_dim = 2 * self.key_dim + self.value_dim
        self.in_proj_qkv = nn.Linear(H, conv_dim, bias=False)
        self.in_proj_z = nn.Linear(H, self.value_dim, bias=False)
        self.in_proj_b = nn.Linear(H, self.vh, bias=False)
        self.in_proj_a = nn.Linear(H, self.vh, bias=False)
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, self.K, groups=conv_dim, bias=False, padding=self.K - 1)
        self.dt_bias = nn.Parameter(torch.ones(self.vh))
        self.A_log = nn.Parameter(torch.zeros(self.vh))
        self.norm = GatedRMSNorm(self.dv, s["eps"])
        self.out_proj = nn.Linear(self.value_dim, H, bias=False)

    def conv(self, mixed):
        """The depthwise causal conv over [B, C, T] with K-1 zeros on the left: 'symmetric-slice' as
        transformers and the peer write it (Conv pads K-1 on both sides, then the first T outputs),
        'pad-left' as an explicit Pad of K-1 zeros before an unpadded Conv."""
        T = mixed.shape[-1]
        w = self.conv1d.weight
        if self.conv_padding == "pad-left":
            return F.conv1d(F.pad(mixed, (self.K - 1, 0)), w, None, groups=mixed.shape[1])
        return F.conv1d(mixed, w, None, padding=self.K - 1, groups=mixed.shape[1])[:, :, :T]

    def forward(self, h, mode, masks, strict_upper):
        B, T, _ = h.shape
        mixed = F.silu(self.conv(self.in_proj_qkv(h).transpose(1, 2))).transpose(1, 2)
        z = self.in_proj_z(h).reshape(B, T, -1, self.dv)
        beta = self.in_proj_b(h).sigmoid()
        g = -self.A_log.exp() * F.softplus(self.in_proj_a(h) + self.dt_bias)
        q, k, v = torch.split(mixed, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        q = q.reshape(B, T, -1, self.dk)
        k = k.reshape(B, T, -1, self.dk)
        v = v.reshape(B, T, -1, self.dv)
        rep = self.vh // self.kh
        if rep > 1:  # each key head serves `rep` value heads in a row (repeat_interleave, as expand + reshape)
            q = q[:, :, :, None].expand(B, T, self.kh, rep, self.dk).reshape(B, T, self.vh, self.dk)
            k = k[:, :, :, None].expand(B, T, self.kh, rep, self.dk).reshape(B, T, self.vh, self.dk)
        if mode == "export":
            core = gated_delta_chunked(q, k, v, g, beta, masks, strict_upper)
        else:
            core = gated_delta_recurrent(q, k, v, g, beta)
        core = self.norm(core.reshape(-1, self.dv), z.reshape(-1, self.dv))
        return self.out_proj(core.reshape(B, T, -1))


class Qwen35Layer(nn.Module):
    def __init__(self, s, full, conv_padding):
        super().__init__()
        self.full = full
        self.input_layernorm = RMSNorm(s["hidden"], s["eps"], True)
        if full:
            self.self_attn = Attention(s, True, True, int(s["head_dim"] * s["partial_rotary"]))
        else:
            self.linear_attn = GatedDeltaNet(s, conv_padding)
        self.post_attention_layernorm = RMSNorm(s["hidden"], s["eps"], True)
        self.mlp = SwiGLU(s["hidden"], s["intermediate"], F.silu)

    def forward(self, x, cos, sin, bias, scaling, mode, masks, strict_upper):
        h = self.input_layernorm(x)
        if self.full:
            h = self.self_attn(h, cos, sin, bias, scaling)
        else:
            h = self.linear_attn(h, mode, masks, strict_upper)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen35Trunk(nn.Module):
    def __init__(self, s, conv_padding="symmetric-slice"):
        super().__init__()
        self.s = dict(s, kind="qwen35")
        every = s["full_every"]
        self.embed_tokens = nn.Embedding(s["vocab"], s["hidden"])
        self.layers = nn.ModuleList(
            [Qwen35Layer(s, (i + 1) % every == 0, conv_padding) for i in range(s["layers"])])
        self.norm = RMSNorm(s["hidden"], s["eps"], True)
        self.rot = int(s["head_dim"] * s["partial_rotary"])
        self.register_buffer("inv_freq", inv_freq_of(s["rope_theta"], self.rot), persistent=False)
        self.register_buffer("masks", doubling_masks(CHUNK), persistent=False)
        self.register_buffer("strict_upper", torch.ones(CHUNK, CHUNK, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, input_ids, mode="export", last=None):
        x = self.embed_tokens(input_ids)
        T = input_ids.shape[1]
        cos, sin = rotary(input_ids, mode, self.inv_freq, self.s["rope_theta"], self.rot, 1.0, x.dtype)
        bias = causal_bias(T, x.dtype, x.device)
        masks = self.masks.to(x.dtype)
        scaling = self.s["head_dim"] ** -0.5
        for layer in self.layers:
            x = layer(x, cos, sin, bias, scaling, mode, masks, self.strict_upper)
        return self.norm(x)


# ------------------------------------------------------------------ Gemma 3 (sliding window)

class Gemma3Layer(nn.Module):
    def __init__(self, s, is_global):
        super().__init__()
        self.is_global = is_global
        H, eps = s["hidden"], s["eps"]
        self.input_layernorm = RMSNorm(H, eps, True)
        self.self_attn = Attention(s, True, False)
        self.post_attention_layernorm = RMSNorm(H, eps, True)
        self.pre_feedforward_layernorm = RMSNorm(H, eps, True)
        self.mlp = SwiGLU(H, s["intermediate"], gelu_tanh)
        self.post_feedforward_layernorm = RMSNorm(H, eps, True)

    def forward(self, x, cos, sin, bias, scaling):
        x = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos, sin, bias, scaling))
        return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))


class Gemma3Trunk(nn.Module):
    """`last` (i64[rows], optional): the row's last real token, from which the exported graph builds
    its padding mask (keys after it masked), as the published Arbiter export feeds transformers an
    attention mask made of `arange(seq) <= last_pos`."""

    def __init__(self, s):
        super().__init__()
        self.s = dict(s, kind="gemma3")
        every = s["global_every"]
        self.embed_tokens = nn.Embedding(s["vocab"], s["hidden"])
        self.layers = nn.ModuleList([Gemma3Layer(s, (i + 1) % every == 0) for i in range(s["layers"])])
        self.norm = RMSNorm(s["hidden"], s["eps"], True)
        hd = s["head_dim"]
        self.register_buffer("inv_freq_local", inv_freq_of(s["rope_local_theta"], hd), persistent=False)
        self.register_buffer("inv_freq_global", inv_freq_of(s["rope_theta"], hd, s["rope_global_factor"]),
                             persistent=False)

    def masks(self, input_ids, last, dtype):
        """Additive masks [rows, 1, T, T] (0 or the dtype's lowest, as transformers builds them): global
        causal; local causal within the window (key j seen from query i when i - W < j <= i); both also
        hide keys after `last` when given."""
        T = input_ids.shape[1]
        i = torch.arange(T, device=input_ids.device)
        q, kpos = i[:, None], i[None, :]
        causal = kpos <= q
        window = kpos > q - self.s["sliding_window"]
        lo = torch.finfo(dtype).min
        keep_g, keep_l = causal[None], (causal & window)[None]
        if last is not None:
            seen = (i[None, :] <= last[:, None])[:, None, :]
            keep_g, keep_l = keep_g & seen, keep_l & seen
        zero = torch.zeros((), dtype=dtype)
        low = torch.full((), lo, dtype=dtype)
        return torch.where(keep_g, zero, low)[:, None], torch.where(keep_l, zero, low)[:, None]

    def forward(self, input_ids, mode="export", last=None):
        s = self.s
        x = self.embed_tokens(input_ids) * math.sqrt(s["hidden"])
        hd = s["head_dim"]
        local = rotary(input_ids, mode, self.inv_freq_local, s["rope_local_theta"], hd, 1.0, x.dtype)
        glob = rotary(input_ids, mode, self.inv_freq_global, s["rope_theta"], hd, s["rope_global_factor"], x.dtype)
        bias_g, bias_l = self.masks(input_ids, last, x.dtype)
        scaling = s["query_pre_attn_scalar"] ** -0.5
        for layer in self.layers:
            cos, sin = glob if layer.is_global else local
            x = layer(x, cos, sin, bias_g if layer.is_global else bias_l, scaling)
        return self.norm(x)


def trunk_of(kind, s, conv_padding="symmetric-slice"):
    if kind == "qwen3":
        return Qwen3Trunk(s)
    if kind == "qwen35":
        return Qwen35Trunk(s, conv_padding)
    if kind == "gemma3":
        return Gemma3Trunk(s)
    raise ValueError("unknown trunk %s" % kind)

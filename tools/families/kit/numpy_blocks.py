"""The pieces the numpy references share (float64): the safetensors reader and the elementwise
functions of a transformer. Needs Debian's python3-numpy."""
import json
import math
import struct

import numpy as np

_erf = np.vectorize(math.erf)


def read_safetensors(path):
    """safetensors by hand: an 8-byte little-endian header length, the JSON header, the raw data."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            raise ValueError("%s: dtype %s" % (name, entry["dtype"]))
        a, b = entry["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(entry["shape"]).astype(np.float64)
    return out


def gelu(x):
    """The exact GELU: x * Phi(x)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, weight, bias=None, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * weight
    return y if bias is None else y + bias


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)

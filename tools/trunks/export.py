#!/usr/bin/python3
"""Exports a causal-row replica on a real trunk (tools/trunks/trunks.py + heads.py) as the published
whole-row graph: torch.onnx.export (TorchScript tracing, opset 17: Debian's torch 1.13), then
onnx (Debian's python3-onnx) for what that exporter does not write:

  1. weights: the trace is exported without its parameters (export_params=False: each parameter and
     buffer a graph input named as in the module, no constant folding of them); every parameter
     becomes an initializer in model.onnx_data (external data, 64-byte aligned), matrices as BF16
     `<name>_bf16` with a Cast to float32 named `<name>` (storage 'bf16', as the published exports
     keep their base weights), vectors float32; storage 'fp32' keeps every parameter float32. The
     values are drawn tensor by tensor and written as drawn, so a replica at a base's size never
     holds its weights twice.
  2. the DeltaNet recurrence: torch 1.13's exporter writes no ONNX Scan (its loops become Loop, from
     TorchScript scripting only), so the inter-chunk step runs in the trace as one custom node
     (`assay.trunks::ChunkScan`), and here each becomes an ONNX Scan over the chunk axis whose
     body is trunks.ChunkStep exported on its own by torch.onnx.export: state [rows, H, dk, dv]
     carried, six scan inputs, the chunk outputs stacked. Its initial state is the
     ConstantOfShape(0) the trace wrote for q.new_zeros(...).

Then, for a tiny replica (`probe`), the module runs eagerly in float32 on a padded batch of probe
rows and their outputs go to probe.json beside the graph: test/families/trunks.test.ts runs the
graph on the same inputs and holds it to them. config.json gets the spec and the weights' digest.

    /usr/bin/python3 tools/trunks/export.py < jobs.json
jobs.json: [{"out": DIR, "trunk": "qwen3"|"qwen35"|"gemma3", "family": "kev"|"decision"|
             "decider-slots"|"arbiter", "size": "tiny"|"0.5b"|"0.8b", "vocab": N, "seed": S,
             "storage": "bf16"|"fp32", "conv_padding"?: "symmetric-slice"|"pad-left",
             "pad_id": P, "labels"?: [255 ids], "head_dim"?, "head_mlp"?, "head_eps"?, "probe": bool}]
"""
import json
import os
import sys
import time

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ beside the sources (the imports below are local)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heads  # noqa: E402
import trunks  # noqa: E402

OPSET = 17
ALIGN = 64


def example_inputs(model, vocab, T=64, rows=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (rows, T), generator=g)
    args = [ids]
    for _name, per in model.head.positions:
        args.append(torch.tensor([T - 1 - r for r in range(rows)]) if per == 1 else torch.tensor([[3, 9, 17]] * rows))
    return tuple(args)


def io_names(model):
    names = ["input_ids"] + [n for n, _ in model.head.positions]
    out, width = model.head.output
    dyn = {"input_ids": {0: "rows", 1: "seq"}, out: {0: "rows"}}
    for n, per in model.head.positions:
        dyn[n] = {0: "rows"} if per == 1 else {0: "rows", 1: "k"}
    if width == "k":
        dyn[out][1] = "k"
    return names, [out], dyn


def export_trace(model, args, path):
    names, outs, dyn = io_names(model)
    model.mode = "export"
    with torch.no_grad():
        torch.onnx.export(model, args, path, input_names=names, output_names=outs, dynamic_axes=dyn,
                          opset_version=OPSET, export_params=False, do_constant_folding=False,
                          custom_opsets={"assay.trunks": 1} if model.model.s["kind"] == "qwen35" else None)
    return onnx.load(path)


def export_body(s, path):
    """trunks.ChunkStep alone: the Scan's body (rows dynamic; heads and dims fixed)."""
    H, dk, dv, C = s["lin_v_heads"], s["lin_k_dim"], s["lin_v_dim"], trunks.CHUNK
    z = lambda *d: torch.zeros(2, H, *d)  # noqa: E731
    args = (z(dk, dv), z(C, dv), z(C, dk), z(C, dk), z(C, C), z(C, dk), z(1, 1))
    names = ["state", "new_v", "k_cumdecay", "q", "intra", "k", "chunk_decay"]
    dyn = {n: {0: "rows"} for n in names + ["state_next", "out"]}
    torch.onnx.export(trunks.ChunkStep(), args, path, input_names=names, output_names=["state_next", "out"],
                      dynamic_axes=dyn, opset_version=OPSET)
    return onnx.load(path).graph


def scan_of(node, body, prefix):
    """The ChunkScan node as an ONNX Scan: its first input the carried state, the other six scanned
    on axis 0; outputs the final state (unused) and the stacked chunk outputs."""
    g = onnx.GraphProto()
    g.CopyFrom(body)
    g.name = prefix + "chunk_step"
    rename = {}
    named = lambda name: prefix + name.lstrip("/")  # noqa: E731
    for v in list(g.input) + list(g.output) + list(g.value_info):
        rename.setdefault(v.name, named(v.name))
    for n in g.node:
        for o in n.output:
            rename.setdefault(o, named(o))
    for init in g.initializer:
        rename.setdefault(init.name, named(init.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        v.name = rename[v.name]
    for init in g.initializer:
        init.name = rename[init.name]
    for n in g.node:
        n.name = named(n.name or n.op_type)
        n.input[:] = [rename.get(i, i) for i in n.input]
        n.output[:] = [rename.get(o, o) for o in n.output]
    return helper.make_node("Scan", list(node.input), [prefix + "final_state", node.output[0]],
                            name=prefix + "Scan", body=g, num_scan_inputs=6)


def replace_scans(model, body):
    nodes = []
    count = 0
    for n in model.graph.node:
        if n.op_type == "ChunkScan":
            nodes.append(scan_of(n, body, "%s/" % (n.name or "ChunkScan_%d" % count)))
            count += 1
        else:
            nodes.append(n)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    keep = [o for o in model.opset_import if o.domain != "assay.trunks"]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    return count


class ExternalData:
    """model.onnx_data written tensor by tensor (each at a 64-byte aligned offset)."""

    def __init__(self, folder, location="model.onnx_data"):
        self.location = location
        self.f = open(os.path.join(folder, location), "wb")
        self.offset = 0

    def tensor(self, name, dtype, dims, raw):
        pad = (-self.offset) % ALIGN
        if pad:
            self.f.write(b"\0" * pad)
            self.offset += pad
        self.f.write(raw)
        t = TensorProto(name=name, data_type=dtype, dims=list(dims), data_location=TensorProto.EXTERNAL)
        for k, v in (("location", self.location), ("offset", str(self.offset)), ("length", str(len(raw)))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.offset += len(raw)
        return t

    def close(self):
        self.f.close()


def bf16_bytes(a):
    return (np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()


def place_weights(model_proto, model, w, storage, ext):
    """Each parameter input becomes an initializer (BF16 + Cast for matrices under 'bf16'); each buffer
    input a float32 / int64 / bool initializer inline. Returns each placed weight's tensor_hash."""
    g = model_proto.graph
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    inputs, casts, inits, hashes = [], [], [], {}
    for v in g.input:
        if v.name in params:
            a = w[v.name]
            hashes[v.name] = heads.tensor_hash(v.name, a)
            if storage == "bf16" and a.ndim >= 2:
                inits.append(ext.tensor(v.name + "_bf16", TensorProto.BFLOAT16, a.shape, bf16_bytes(a)))
                casts.append(helper.make_node("Cast", [v.name + "_bf16"], [v.name], name=v.name + "/Cast",
                                              to=TensorProto.FLOAT))
            else:
                inits.append(ext.tensor(v.name, TensorProto.FLOAT, a.shape, a.astype("<f4").tobytes()))
        elif v.name in buffers:
            inits.append(numpy_helper.from_array(buffers[v.name].detach().cpu().numpy(), v.name))
        else:
            inputs.append(v)
    del g.input[:]
    g.input.extend(inputs)
    g.initializer.extend(inits)
    nodes = casts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    return hashes


def fixed_width(proto, model):
    """A head of fixed width (24 slots, 255 labels) declares it: the exporter's shape inference loses it
    behind the Scan's custom node."""
    _out, width = model.head.output
    if isinstance(width, int):
        dim = proto.graph.output[0].type.tensor_type.shape.dim[1]
        dim.Clear()
        dim.dim_value = width


def probe_batch(spec, model, vocab):
    """A padded batch of rows of different lengths (one past several 64-token chunks, one past the
    sliding window many times over), right-padded with the family's pad id to a multiple of 64."""
    rng = np.random.RandomState(spec["seed"] + 7)
    lengths = [333, 70, 129, 5]
    T = -(-max(lengths) // 64) * 64
    ids = np.full((len(lengths), T), spec["pad_id"], dtype=np.int64)
    for r, n in enumerate(lengths):
        ids[r, :n] = rng.randint(0, vocab, size=n)
    args = [ids]
    for _name, per in model.head.positions:
        if per == 1:
            args.append(np.array([n - 1 for n in lengths], dtype=np.int64))
        else:  # three positions per row inside it, the last one the row's last-but-one token
            args.append(np.array([[rng.randint(0, n), rng.randint(0, n), max(n - 2, 0)] for n in lengths],
                                 dtype=np.int64))
    return args


def write_probe(folder, spec, model):
    args = probe_batch(spec, model, spec["vocab"])
    model.mode = "export"
    with torch.no_grad():
        out = model.float()(*[torch.from_numpy(a) for a in args])
    names, outs, _ = io_names(model)
    tensor = lambda a: {"dims": list(a.shape), "data": a.reshape(-1).tolist()}  # noqa: E731
    probe = {"inputs": {n: tensor(a) for n, a in zip(names, args)},
             "outputs": {outs[0]: tensor(out.numpy().astype(np.float64))}}
    with open(os.path.join(folder, "probe.json"), "w") as f:
        json.dump(probe, f)


def export(spec):
    t0 = time.time()
    out = spec["out"]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = heads.build_model(spec).eval()
    w = heads.weights(spec, model, keep=bool(spec.get("probe")))
    if spec.get("probe"):
        trunks.load_weights(model, w, torch.float32)
    tmp = os.path.join(out, "trace.onnx")
    t1 = time.time()
    proto = export_trace(model, example_inputs(model, spec["vocab"]), tmp)
    scans = 0
    if spec["trunk"] == "qwen35":
        body_path = os.path.join(out, "body.onnx")
        scans = replace_scans(proto, export_body(model.model.s, body_path))
        os.remove(body_path)
    os.remove(tmp)
    t2 = time.time()
    ext = ExternalData(out)
    hashes = place_weights(proto, model, w, spec["storage"], ext)
    fixed_width(proto, model)
    t3 = time.time()
    ext.close()
    proto.producer_name = "assay-trunk-replica"
    proto.doc_string = "%s replica on a %s trunk: random weights, MEANINGLESS answers." % (spec["family"], spec["trunk"])
    onnx.save_model(proto, os.path.join(out, "model.onnx"))
    onnx.checker.check_model(os.path.join(out, "model.onnx"))
    if spec.get("probe"):
        write_probe(out, spec, model)
    s = model.model.s
    config = dict(spec, shape=s, digest=heads.digest(w, hashes), scans=scans,
                  parameters=int(sum(int(np.prod(shape)) for shape in w.shapes.values())))
    config.pop("out")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return {"out": out, "seconds": round(time.time() - t0, 2), "digest": config["digest"], "scans": scans,
            "phases": {"build": round(t1 - t0, 2), "trace": round(t2 - t1, 2), "weights": round(t3 - t2, 2),
                       "save": round(time.time() - t3, 2)}}


def main():
    torch.set_num_threads(int(os.environ.get("TRUNK_EXPORT_THREADS", "1")))
    jobs = json.load(sys.stdin)
    json.dump([export(spec) for spec in jobs], sys.stdout)


if __name__ == "__main__":
    main()

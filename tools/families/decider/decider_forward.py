#!/usr/bin/python3
"""Reference forward of the decider-labels replica: the label logits at each row's slot.

The replica (tools/families/decider/replica.ts) is the project's tiny Qwen2-shaped decoder with the
trained tiny-tasks weights; its independent PyTorch forward is tools/train/train.py's (op for op the
synthetic ONNX graph, checked by tools/train/check-onnx.ts), used here as is, in fp32. Token ids the
weights file does not hold have an embedding row of exactly zero (the generator writes zeros there),
so such a token enters as a zero vector and its logit (tied head) is exactly 0.

    python3 decider_forward.py < job.json -> {"logits": [[label logit, ...] per row]}
job.json: {"weights": path, "rows": [{"ids": [...], "slot": i, "labels": [...]}]}
Needs PyTorch (Debian: python3-torch).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "train"))
import train  # noqa: E402  (tools/train/train.py: the Tiny forward and its weights reader)


def main():
    job = json.load(sys.stdin)
    torch.set_num_threads(1)
    cfg = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "models", "shapes.json")))["tiny"]["config"]
    model, used = train.load_model(cfg, job["weights"])
    zero = len(used)
    with torch.no_grad():
        model.embed = torch.nn.Parameter(torch.cat([model.embed, torch.zeros(1, model.embed.shape[1])]))
    cmap = {t: i for i, t in enumerate(used)}
    out = []
    with torch.no_grad():
        for row in job["rows"]:
            ids = torch.tensor([[cmap.get(t, zero) for t in row["ids"][: row["slot"] + 1]]])
            h = model.hidden(ids)[0, row["slot"]]
            labels = torch.tensor([cmap.get(t, zero) for t in row["labels"]])
            out.append([float(x) for x in model.embed[labels] @ h])
    json.dump({"logits": out}, sys.stdout)


if __name__ == "__main__":
    main()

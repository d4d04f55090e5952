#!/usr/bin/env python3
"""An independent reference of the Arbiter row layout (`arbiter-fixed`), written from the published
description of the authors' layout (the peer's ollaya-dev/ollaya:docs/families/arbiter.md:
render(), the prompt, the options blocks, the 24 fixed slots), not from Assay's TypeScript:

    row    "State: " + render(state) + "\n\nQuestion: " + render(instructions)
           + "\n\nOptions:\n" + block + "\n\nAnswer:"      tokenized whole, no special tokens
    block  noul   "T. Yes / True\nF. No / False"              slots 0 (true), 1 (false)
           choice "A. opt\nB. opt..." (1..16 options)        slots 2..17
           score  "0\n1\n2\n3\n4\n5" (exactly 6 levels)      slots 18..23
    last_pos = len(row) - 1

A choice option's line is its name, or "name: render(description)" when that is not empty (the
peer writes `{opt}`; Assay's reading). Refused: a choice of 0 or more than 16 options, a score of
other than 6 levels, a row over max_len tokens (nothing is cut).

Content is data (Assay's documented rule, docs/families/arbiter-fixed.md): the row's text is
tokenized as ordinary text, so a special-token string typed by a caller (`<start_of_turn>`, `<bos>`,
any added token) is its ordinary tokens, never the control token. Upstream's tokenizer matches
added tokens in the text; Assay deviates on purpose. The template holds no special-token string,
so no row holds a special-token id: the harness tokenizes every text this reference names as
ordinary text and passes the tokenizer's added-token ids as "special_ids"; `layout` fails (exit 3)
on a row holding one rather than writing it.

Two passes, the tokenizer being outside: `segments` lists the texts to tokenize, `layout` lays the
requests out with their ids; `readout` calibrates a row's 24 scores.

    /usr/bin/python3 arbiter_layout.py segments|layout < job.json
"""
import json
import math
import sys


class Refused(Exception):
    def __init__(self, count, limit):
        super().__init__("refused")
        self.count = count
        self.limit = limit


def render(v, indent=0):
    pad = "  " * indent
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, int, float)):
        return str(v)
    if isinstance(v, list):
        return "\n".join(pad + "- " + render(x, indent + 1).lstrip() for x in v)
    if isinstance(v, dict):
        lines = []
        for k, x in v.items():
            if isinstance(x, (dict, list)):
                lines.append(pad + k + ":\n" + render(x, indent + 1))
            else:
                lines.append(pad + k + ": " + render(x))
        return "\n".join(lines)
    return str(v)


def block(q):
    kind = q["type"]
    if kind == "noul":
        return "T. Yes / True\nF. No / False", [0, 1]
    if kind == "choice":
        pairs = q["criteria"]
        if len(pairs) < 1 or len(pairs) > 16:
            raise Refused(len(pairs), 16)
        lines = []
        for i, (name, desc) in enumerate(pairs):
            d = render(desc)
            lines.append("%s. %s" % (chr(65 + i), name if d == "" else name + ": " + d))
        return "\n".join(lines), list(range(2, 2 + len(pairs)))
    levels = q["criteria"]
    if len(levels) != 6:
        raise Refused(len(levels), 6)
    return "\n".join(str(i) for i in range(6)), list(range(18, 24))


def text(request):
    q = request["question"]
    options, slots = block(q)
    row = ("State: " + render(request.get("state")) + "\n\nQuestion: " + render(q.get("instructions"))
           + "\n\nOptions:\n" + options + "\n\nAnswer:")
    return row, slots


def softmax(z):
    m = max(z)
    e = [math.exp(x - m) for x in z]
    s = sum(e)
    return [x / s for x in e]


def readout(kind, scores, slots, temperature):
    """The answer numbers of a row's 24 scores: softmax over the question's slots / T; noul P(true)
    (slot 0); choice and score the probabilities and the entropy confidence; score the expected level."""
    p = softmax([scores[s] / temperature for s in slots])
    if kind == "noul":
        return {"probabilities": p, "noul": p[0]}
    h = -sum(x * math.log(min(1.0, max(x, 1e-12))) for x in p)
    conf = 1.0 if len(p) < 2 else min(1.0, max(0.0, 1.0 - h / math.log(len(p))))
    out = {"probabilities": p, "confidence": conf}
    if kind == "score":
        out["score"] = sum(i * x for i, x in enumerate(p))
    return out


def check_data(name, ids, special_ids):
    """Content is data: the template puts no special token in a row, so none may be there."""
    forged = sorted(set(ids) & special_ids)
    if forged:
        sys.stderr.write("%s: special-token ids %s in the row: caller text was not tokenized as data\n" % (name, forged))
        sys.exit(3)


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    job = json.load(sys.stdin)
    config = job["config"]
    if command == "segments":
        segs = set()
        for r in job["requests"]:
            try:
                segs.add(text(r)[0])
            except Refused:
                pass
        json.dump({"segments": sorted(segs)}, sys.stdout, ensure_ascii=False)
    elif command == "layout":
        results = []
        for r in job["requests"]:
            try:
                row, slots = text(r)
                ids = job["tokens"][row]
                check_data(r["name"], ids, set(job.get("special_ids", [])))
                if len(ids) > config["max_len"]:
                    raise Refused(len(ids), config["max_len"])
                out = {"name": r["name"], "ids": ids, "last_pos": len(ids) - 1, "slots": slots}
                if "logits" in r:
                    out["readout"] = readout(r["question"]["type"], r["logits"], slots, config["temperature"])
            except Refused as e:
                out = {"name": r["name"], "refused": {"count": e.count, "limit": e.limit}}
            results.append(out)
        json.dump({"results": results}, sys.stdout, ensure_ascii=False)
    else:
        sys.stderr.write("usage: arbiter_layout.py segments|layout < job.json\n")
        sys.exit(2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Independent reference of the Laya text layout (`laya-markers`) and its head readout.

Written from the authors' published rules (NandhaKishorM/laya: laya/common.py `render_options`,
`render_criterion`, `serialize_state`, `build_sequence`, `temp_bucket`, `clamp_temperature`;
laya/agent.py `_to_internal`, `_encode_state`, `_decode_answers`), read to learn, not copied, and
NOT from Assay's TypeScript. Python 3 standard library only (Debian's /usr/bin/python3).

Python has no tokenizer library here, so tokenization is the harness's job, in two passes:

  python3 laya_layout.py segments < job.json   -> {"segments": [text, ...]}
      every text this reference would hand the tokenizer (after rendering, serialising and
      neutralising), for every request of the job;
  python3 laya_layout.py layout < job.json     -> {"results": [...]}
      the same job plus "tokens": {text: [ids]} for those segments: rows, marker positions,
      qtype, what was cut, refusals, and the calibrated readout of each request's fake logits.

job.json: {"tokenizer": {"cls_id", "sep_id", "mask_id", "mask_token", "special_tokens"},
           "configs": {name: rl_agent_config.json-like object},
           "requests": [{"name", "config", "state", "question", "logits"?}]}
A choice question's criteria come as a list of [name, description] pairs (their order is the
caller's); noul and score criteria as the contract sends them.

Assay's one deviation from the authors' code is modelled here on purpose: every special-token
string of the tokenizer in user text becomes a space, not only the mask token (the authors'
tokenizer would read `[SEP]` in a state as the control token). A question without instructions
is read as instructions null (the authors' Agent refuses it; Assay's contract makes them optional).
"""
import json
import math
import sys

QTYPE = {"choice": 0, "score": 1, "noul": 2}
OPTION_CAP = 48          # tokens kept of one rendered option, after its marker
HEAD_SLACK = 16          # fewer than this many tokens of head_max_len left -> options cut evenly
MIN_PER_OPTION = 4       # the least an evenly cut option keeps, marker included
MIN_INSTRUCTIONS = 8     # the instructions keep at least this many tokens
T_LO, T_HI = 0.5, 5.0    # applied temperatures are confined to this range


def as_text(value):
    """Content as the reference writes it: strings verbatim, the rest as JSON, non-ASCII kept."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class Neutraliser:
    def __init__(self, mask_token, special_tokens):
        # the mask token first (the authors' rule), then every other special string (Assay's)
        self.order = [mask_token] + [s for s in special_tokens if s and s != mask_token]

    def __call__(self, text):
        for s in self.order:
            text = text.replace(s, " ")
        return text


def option_texts(question):
    kind = question["type"]
    crit = question.get("criteria")
    if kind == "choice":
        names = [pair[0] for pair in crit]
        texts = []
        for name, desc in crit:
            if desc is None or desc == "":
                texts.append(name)
            else:
                texts.append("%s: %s" % (name, as_text(desc)))
        return names, texts
    if kind == "score":
        return [str(i) for i in range(len(crit))], ["level %d: %s" % (i, as_text(c)) for i, c in enumerate(crit)]
    crit = crit or {}
    no, yes = crit.get("false"), crit.get("true")
    return ["false", "true"], [
        "false: " + ("no, the statement does not hold" if no in (None, "") else as_text(no)),
        "true: " + ("yes, the statement holds" if yes in (None, "") else as_text(yes)),
    ]


def instructions_text(question):
    ins = question.get("instructions")
    return ins if isinstance(ins, str) else json.dumps(ins, ensure_ascii=False)


def state_text(state):
    return state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)


def segments_of(request, neutral):
    """The texts to tokenize, in the order the layout uses them: head, options, state."""
    q = request["question"]
    _, texts = option_texts(q)
    head = "%s question: %s" % (q["type"], neutral(instructions_text(q)))
    return [head] + [" " + neutral(t) for t in texts] + [neutral(state_text(request["state"]))]


def build(request, tok, tokens, limits):
    neutral = Neutraliser(tok["mask_token"], tok["special_tokens"])
    q = request["question"]
    keys, _ = option_texts(q)
    segs = segments_of(request, neutral)
    head_ids = tokens[segs[0]]
    opt_full = [tokens[s] for s in segs[1:-1]]
    state_ids = tokens[segs[-1]]
    max_len, head_max_len = limits["max_len"], limits["head_max_len"]
    cut = {}

    opts = [[tok["mask_id"]] + ids[:OPTION_CAP] for ids in opt_full]
    n_cut = sum(1 for ids in opt_full if len(ids) > OPTION_CAP)
    per = None
    left = head_max_len - sum(map(len, opts))
    if left < HEAD_SLACK:
        per = max(MIN_PER_OPTION, (head_max_len - HEAD_SLACK) // max(1, len(opts)))
        opts = [o[:per] for o in opts]
        left = head_max_len - sum(map(len, opts))
        n_cut = sum(1 for o, ids in zip(opts, opt_full) if len(o) < len(ids) + 1)
    if n_cut:
        cut["options"] = {"cut": n_cut, "perOption": per}
    keep_head = max(MIN_INSTRUCTIONS, left)
    if len(head_ids) > keep_head:
        cut["instructions"] = {"kept": keep_head, "total": len(head_ids)}

    row = [tok["cls_id"]] + head_ids[:keep_head] + [tok["sep_id"]]
    markers = []
    for o in opts:
        markers.append(len(row))
        row += o
    row.append(tok["sep_id"])

    inside = [m for m in markers if m < max_len]
    if len(inside) != len(keys):
        # the authors: markers past max_len are dropped, then "options exceed head_max_len"
        return {"refused": {"options": len(keys), "optionsKept": len(inside), "count": len(row) + 1,
                            "limit": max_len, "headMaxLen": head_max_len}}

    room = max(0, max_len - len(row) - 1)
    if isinstance(request["state"], list):   # a conversation: keep the newest turns
        kept = state_ids[max(0, len(state_ids) - room):]
        side = "end"
    else:
        kept = state_ids[:room]
        side = "start"
    if len(kept) < len(state_ids):
        cut["state"] = {"kept": len(kept), "total": len(state_ids), "keep": side}
    row = row + kept + [tok["sep_id"]]
    if len(row) > max_len:
        cut["row"] = {"kept": max_len, "total": len(row)}
        row = row[:max_len]
    out = {"ids": row, "markerPositions": markers, "qtype": QTYPE[q["type"]], "options": keys}
    if cut:
        out["truncated"] = cut
    return out


def clamp(t):
    try:
        t = float(t)
    except (TypeError, ValueError):
        return 1.0
    if math.isnan(t) or math.isinf(t):
        return 1.0
    return min(T_HI, max(T_LO, t))


def bucket(kind, k):
    if k <= 2:
        size = "2"
    elif k <= 5:
        size = "3-5"
    elif k <= 10:
        size = "6-10"
    else:
        size = "11+"
    return kind + ":" + size


def readout(kind, logits, cfg):
    per_type = [clamp(t) for t in cfg.get("temperature", [1.0, 1.0, 1.0])]
    by_options = {name: clamp(t) for name, t in cfg.get("temperature_by_options", {}).items()}
    b = bucket(kind, len(logits))
    t = by_options[b] if b in by_options else per_type[QTYPE[kind]]
    z = [x / t for x in logits]
    top = max(z)
    e = [math.exp(x - top) for x in z]
    s = sum(e)
    p = [x / s for x in e]
    best = p.index(max(p))
    out = {"bucket": b, "temperature": t, "probabilities": p, "best": best}
    if kind == "noul":
        out["noul"] = p[1]
        return out
    k = len(p)
    if k < 2:
        conf = 1.0
    else:
        h = -sum(x * math.log(min(1.0, max(x, 1e-12))) for x in p)
        conf = min(1.0, max(0.0, 1.0 - h / math.log(k)))
    out["confidence"] = conf
    if kind == "score":
        out["score"] = sum(i * x for i, x in enumerate(p))
    return out


def limits_of(cfg):
    return {"max_len": cfg.get("max_len", 512), "head_max_len": cfg.get("head_max_len", 192)}


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    job = json.load(sys.stdin)
    tok = job["tokenizer"]
    neutral = Neutraliser(tok["mask_token"], tok["special_tokens"])
    if command == "segments":
        seen, segments = set(), []
        for r in job["requests"]:
            for s in segments_of(r, neutral):
                if s not in seen:
                    seen.add(s)
                    segments.append(s)
        json.dump({"segments": segments}, sys.stdout, ensure_ascii=False)
    elif command == "layout":
        tokens = job["tokens"]
        results = []
        for r in job["requests"]:
            cfg = job["configs"][r["config"]]
            res = {"name": r["name"]}
            res.update(build(r, tok, tokens, limits_of(cfg)))
            if "refused" not in res and r.get("logits") is not None:
                res["readout"] = readout(r["question"]["type"], r["logits"], cfg)
            results.append(res)
        json.dump({"results": results}, sys.stdout, ensure_ascii=False)
    else:
        sys.exit("usage: laya_layout.py segments|layout < job.json")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Independent reference of the Kev pointer layout (`kev-pointer`) and its readout.

Written from the authors' published code (jaredpalmer/kev: kev/api.py render(), option_text(),
to_record(); kev/encoding.py user_tokens(), encode(), rows_of(); kev/model.py's serving limits
SERVE_MAX_STATE = 8192 and SERVE_MAX_BRANCH = SERVE_MAX_STATE + 8192, one row = the state and its branch), read to learn, not copied, and NOT from Assay's
TypeScript. Python 3 standard library only (Debian's /usr/bin/python3).

One row per question:
    [<state>] + user(render(state))[: max_state - 1]
    + [<question>] + user(render(instructions))
    + for each option: [<option_open>] + user(option) + [<option_close>]
    + [<decide>]
decide = the last index; opts[j] = the index of option j's <option_close>. A row of more than
max_row tokens is refused (the authors' ContextOverflow: a 422). Each segment is tokenized on its
own, without special tokens, by the harness, in two passes:

  python3 kev_layout.py segments < job.json   -> {"segments": [text, ...]}
  python3 kev_layout.py layout < job.json     -> {"results": [...]}
      the same job plus "tokens": {text: [ids]}.

job.json: {"config": {"special_tokens": {state, question, option_open, option_close, decide: id},
                      "max_state": 8192, "max_row": 16384,
                      "temperature": [t_choice, t_score, t_noul]},
           "requests": [{"name", "state", "question", "scores"?}]}
A choice question's criteria come as a list of [name, description] pairs (the caller's order).
The readout (of each request's fake scores): softmax(scores / T of the type); noul = P(yes), the
head's options being [no, yes]; score = sum(level * p); confidence = 1 - H / ln K (Assay's
default confidence, choice and score).
"""
import json
import math
import re
import sys

SPECIAL_RE = re.compile(r"<\|([A-Za-z0-9_]+)\|>")
TYPE_INDEX = {"choice": 0, "score": 1, "noul": 2}


def render(v, indent=0):
    pad = "  " * indent
    if v is None:
        return ""
    if isinstance(v, (str, int, float, bool)):
        return str(v)
    if isinstance(v, list):
        return "\n".join(pad + "- " + render(x, indent + 1).lstrip() for x in v)
    lines = []
    for k, x in v.items():
        if isinstance(x, (dict, list)):
            lines.append(pad + k + ":\n" + render(x, indent + 1))
        else:
            lines.append(pad + k + ": " + render(x))
    return "\n".join(lines)


def user(text):
    return SPECIAL_RE.sub("<\u00a6\\1\u00a6>", text)


def option_text(name, desc):
    return name if desc is None or desc == "" else name + ": " + render(desc)


def options_of(question):
    kind = question["type"]
    crit = question.get("criteria")
    if kind == "noul":
        c = crit or {}
        return [option_text("no", c.get("false")), option_text("yes", c.get("true"))]
    if kind == "choice":
        return [option_text(name, desc) for name, desc in crit]
    return [render(level) for level in crit]


def texts(request):
    """The texts the tokenizer receives: the state, the instructions, each option (after user())."""
    q = request["question"]
    return user(render(request["state"])), user(render(q.get("instructions"))), [user(o) for o in options_of(q)]


def build(request, config, tokens):
    sp = config["special_tokens"]
    state, instructions, options = texts(request)
    state_ids = tokens[state]
    kept = state_ids[: config["max_state"] - 1]
    head = [sp["state"]] + kept
    branch = [sp["question"]] + tokens[instructions]
    ends = []
    for o in options:
        branch += [sp["option_open"]] + tokens[o] + [sp["option_close"]]
        ends.append(len(branch) - 1)
    branch.append(sp["decide"])
    count = len(head) + len(branch)
    if count > config["max_row"]:
        return {"refused": {"branchTokens": len(branch), "count": count, "limit": config["max_row"]}}
    row = {"ids": head + branch, "decide": count - 1, "opts": [len(head) + e for e in ends]}
    return {"row": row, "truncated": len(state_ids) > len(kept)}


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    s = sum(e)
    return [x / s for x in e]


def readout(kind, scores, temperatures):
    t = temperatures[TYPE_INDEX[kind]]
    p = softmax([s / t for s in scores])
    if kind == "noul":
        return {"probabilities": p, "noul": p[1]}
    k = len(p)
    if k < 2:
        conf = 1.0
    else:
        h = -sum(x * math.log(x) for x in p if x > 0)
        conf = min(1.0, max(0.0, 1.0 - h / math.log(k)))
    out = {"probabilities": p, "confidence": conf}
    if kind == "score":
        out["score"] = sum(i * x for i, x in enumerate(p))
    return out


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    job = json.load(sys.stdin)
    if command == "segments":
        seen = {}
        for r in job["requests"]:
            state, instructions, options = texts(r)
            for s in [state, instructions] + options:
                seen[s] = True
        json.dump({"segments": list(seen)}, sys.stdout, ensure_ascii=False)
    elif command == "layout":
        config, tokens = job["config"], job["tokens"]
        results = []
        for r in job["requests"]:
            out = {"name": r["name"]}
            out.update(build(r, config, tokens))
            if "row" in out and r.get("scores") is not None:
                out["readout"] = readout(r["question"]["type"], r["scores"], config["temperature"])
            results.append(out)
        json.dump({"results": results}, sys.stdout, ensure_ascii=False)
    else:
        sys.exit("usage: kev_layout.py segments|layout < job.json")


if __name__ == "__main__":
    main()

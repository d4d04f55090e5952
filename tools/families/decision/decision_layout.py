#!/usr/bin/env python3
"""An independent reference of the Decision 1.0 row layout (`decision-endpoint`), written from the
authors' prompt contract as published (the peer's ollaya-dev/ollaya:docs/families/decision.md, the
public record in /work/shared/FAMILIES.md), not from Assay's TypeScript:

    prefix   "Context:\n" + payload(state) + "\n\nTask type: " + type + "\nQuestion:\n"
             + payload(instructions) + "\nOptions:"
    option   "\n<option>\n" + canonical({"key": key, "description": description}) + "\n</option>"
    suffix   "\n\nSelect the single option best supported by the context and instructions.\nDecision:"
    row      enc(prefix) + enc(option_1) + ... + enc(option_k) + enc(suffix)
    cand_pos[j] = last token of enc(option_j); query_pos = len(row) - 1

payload(v) is v for a string, else canonical(v) = json.dumps(v, ensure_ascii=False,
sort_keys=True, separators=(",", ":")). Candidates: choice (key, value) in the sent order (a null
value stays null, or becomes the key when the folder says so); noul ("false", criteria.get("false",
default)), ("true", ...); score (str(i), level_i). Refused: choice outside 2..max_options, score
outside 2..max_levels, noul criteria with keys other than "true"/"false", a row over max_len.
Nothing is cut.

Content is data (Assay's documented rule, docs/families/decision-endpoint.md): every segment is
tokenized as ordinary text, so a special-token string typed by a caller (`<|im_start|>`,
`<|endoftext|>`, any added token) is its ordinary tokens, never the control token. Upstream's
tokenizer matches added tokens in the text; Assay deviates on purpose. The template holds no
special-token string, so no row holds a special-token id: the harness tokenizes every text this
reference names as ordinary text and passes the tokenizer's added-token ids as "special_ids";
`layout` fails (exit 3) on a row holding one rather than writing it.

Two passes, the tokenizer being outside: `segments` lists the texts to tokenize, `layout` lays the
requests out with their ids. `readout` gives the calibrated answer numbers of a row's logits.

    /usr/bin/python3 decision_layout.py segments|layout < job.json
"""
import json
import math
import sys

SUFFIX = "\n\nSelect the single option best supported by the context and instructions.\nDecision:"
NOUL_DEFAULT = {"false": "The answer to the question is no.", "true": "The answer to the question is yes."}


class Refused(Exception):
    def __init__(self, count, limit):
        super().__init__("refused")
        self.count = count
        self.limit = limit


def canonical(v):
    return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def payload(v):
    return v if isinstance(v, str) else canonical(v)


def candidate_list(q, config):
    kind = q["type"]
    if kind == "choice":
        pairs = q["criteria"]
        if len(pairs) < 2 or len(pairs) > config["max_options"]:
            raise Refused(len(pairs), config["max_options"])
        null_key = config.get("choice_null_description", "null") == "key"
        return [(k, (k if null_key else None) if d is None else d) for k, d in pairs]
    if kind == "score":
        levels = q["criteria"]
        if len(levels) < 2 or len(levels) > config["max_levels"]:
            raise Refused(len(levels), config["max_levels"])
        return [(str(i), level) for i, level in enumerate(levels)]
    criteria = q.get("criteria") or {}
    other = [k for k in criteria if k not in ("true", "false")]
    if other:
        raise Refused(len(other), 0)
    return [(k, criteria[k] if k in criteria else NOUL_DEFAULT[k]) for k in ("false", "true")]


def texts(request, config):
    q = request["question"]
    cands = candidate_list(q, config)
    prefix = ("Context:\n" + payload(request.get("state")) + "\n\nTask type: " + q["type"] + "\nQuestion:\n"
              + payload(q.get("instructions")) + "\nOptions:")
    options = ["\n<option>\n" + canonical({"key": k, "description": d}) + "\n</option>" for k, d in cands]
    return [prefix] + options + [SUFFIX]


def check_data(name, ids, special_ids):
    """Content is data: the template puts no special token in a row, so none may be there."""
    forged = sorted(set(ids) & special_ids)
    if forged:
        sys.stderr.write("%s: special-token ids %s in the row: caller text was not tokenized as data\n" % (name, forged))
        sys.exit(3)


def layout(request, config, tokens):
    parts = texts(request, config)
    ids = []
    cand_pos = []
    for i, text in enumerate(parts):
        ids.extend(tokens[text])
        if 0 < i < len(parts) - 1:
            cand_pos.append(len(ids) - 1)
    if len(ids) > config["max_len"]:
        raise Refused(len(ids), config["max_len"])
    return {"ids": ids, "cand_pos": cand_pos, "query_pos": len(ids) - 1}


def softmax(z):
    m = max(z)
    e = [math.exp(x - m) for x in z]
    s = sum(e)
    return [x / s for x in e]


def readout(kind, logits, temperature):
    """The answer numbers of a row's candidate logits: softmax(logits / T); noul P(true) (the head's
    order is false, true); choice and score the probabilities and the entropy confidence 1 - H/ln k;
    score the expected level."""
    p = softmax([x / temperature for x in logits])
    if kind == "noul":
        return {"probabilities": p, "noul": p[1]}
    h = -sum(x * math.log(min(1.0, max(x, 1e-12))) for x in p)
    out = {"probabilities": p, "confidence": min(1.0, max(0.0, 1.0 - h / math.log(len(p))))}
    if kind == "score":
        out["score"] = sum(i * x for i, x in enumerate(p))
    return out


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    job = json.load(sys.stdin)
    config = job["config"]
    if command == "segments":
        segs = []
        for r in job["requests"]:
            try:
                segs.extend(texts(r, config))
            except Refused:
                pass
        json.dump({"segments": sorted(set(segs))}, sys.stdout, ensure_ascii=False)
    elif command == "layout":
        results = []
        for r in job["requests"]:
            try:
                out = {"name": r["name"], **layout(r, config, job["tokens"])}
                check_data(r["name"], out["ids"], set(job.get("special_ids", [])))
                if "logits" in r:
                    out["readout"] = readout(r["question"]["type"], r["logits"], config["temperature"])
            except Refused as e:
                out = {"name": r["name"], "refused": {"count": e.count, "limit": e.limit}}
            results.append(out)
        json.dump({"results": results}, sys.stdout, ensure_ascii=False)
    else:
        sys.stderr.write("usage: decision_layout.py segments|layout < job.json\n")
        sys.exit(2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Independent reference of the decider label-token layout (`decider-labels`) and its readout.

Written from the published rules (read to learn, not copied): the authors' prompt and request
adapter (Mapika/decider decider/prompt.py: "Context:\\n" + state, "\\n\\nQuestion: ...\\nOptions:",
"\\n(L) option", "\\nAnswer: (", the slot = the last token; decider/systemone.py: state rendering
with annotate_indices, option texts, 2..255 options, 2..10 levels, isolated yes/no rows per score
level, combine_isolated) and the closest peer's written layout (ollaya-dev/ollaya
docs/families/decider.md: the 32,768-token context cut, the wide rows' segment-wise tokenization
with the label token inserted, the 255-label table, the [T, 1, T] calibration and
z = log sigmoid((l_yes - l_no) / T)). NOT from Assay's TypeScript. Assay's documented rule for
content (docs/families/decider-labels.md): caller text is tokenized as ordinary text, so
special-token strings in it are never control tokens; the harness tokenizes every text this
reference names that way. Python 3 standard library only.

Tokenization is the harness's job, in two passes:

  python3 decider_layout.py segments < job.json  -> {"segments": [text, ...]}
      every text this reference hands the tokenizer (the label candidates A..ZZ included);
  python3 decider_layout.py layout < job.json    -> {"labels": {...}, "results": [...]}
      the same job plus "tokens": {text: [ids]}: per request its context, rows (piece, slot,
      label ids), or its refusal; and the readout of the request's label logits, when given;
  python3 decider_layout.py readout < job.json   -> {"results": [{"name", "probabilities"}]}
      the readout alone, of label logits the job gives (the replica's forward, for instance).

job.json: {"requests": [{"name", "state", "questions": [[key, question], ...],
                         "label_logits"?: [[per row, one per label]]}],
           "temperature": [t_choice, t_score, t_noul], "row_temperature"?: T,
           "answer_temperature"?: {type: t}}
A choice question's criteria come as a list of [name, description] pairs (the caller's order).
"""
import json
import math
import re
import sys

CONTEXT_TOKENS = 32768
MAX_CHOICE, MAX_LEVELS = 255, 10
NARROW = 10
ANNOTATE_MIN = 8
NOUL_WITHOUT_INSTRUCTIONS = "Which answer fits the context?"
LEVEL_NUMBER = re.compile(r"^\s*-?\d+\s*:\s*")


class Refused(Exception):
    pass


def as_text(v):
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def annotate(x):
    if isinstance(x, list):
        if len(x) >= ANNOTATE_MIN:
            return [({"_index": i, **annotate(v)} if isinstance(v, dict) else {"_index": i, "value": annotate(v)})
                    for i, v in enumerate(x)]
        return [annotate(v) for v in x]
    if isinstance(x, dict):
        return {k: annotate(v) for k, v in x.items()}
    return x


def state_text(state):
    return state if isinstance(state, str) else json.dumps(annotate(state), ensure_ascii=False)


def label_candidates():
    az = [chr(65 + i) for i in range(26)]
    return az + [a + b for a in az for b in az]


def label_table(tokens):
    strings, ids = [], []
    for s in label_candidates():
        if len(strings) == MAX_CHOICE:
            break
        t = tokens[s]
        if len(t) == 1:
            strings.append(s)
            ids.append(t[0])
    return {"strings": strings, "ids": ids}


def described(d):
    return d is not None and d != ""


def asked(q):
    """-> [(question text, [option texts], level or None)]; raises Refused."""
    kind = q["type"]
    raw = q.get("instructions", "")
    if kind == "noul" and raw in (None, ""):
        c = q.get("criteria") or {}
        if not (described(c.get("true")) or described(c.get("false"))):
            raise Refused("noul without instructions or described criteria")
        text = NOUL_WITHOUT_INSTRUCTIONS
    else:
        text = as_text(raw)
        if text == "":
            raise Refused("no instructions")
    if kind == "noul":
        c = q.get("criteria") or {}
        f, t = c.get("false"), c.get("true")
        return [(text, ["no: " + as_text(f) if described(f) else "no", "yes: " + as_text(t) if described(t) else "yes"], None)]
    if kind == "choice":
        pairs = q["criteria"]
        if not 2 <= len(pairs) <= MAX_CHOICE:
            raise Refused("choice of %d options" % len(pairs))
        return [(text, [n if d in (None, "") else n + ": " + as_text(d) for n, d in pairs], None)]
    levels = q["criteria"]
    if not 2 <= len(levels) <= MAX_LEVELS:
        raise Refused("score of %d levels" % len(levels))
    return [(text + "\nProposed answer: " + LEVEL_NUMBER.sub("", as_text(l), count=1) + "\nDoes the proposed answer fit?",
             ["no", "yes"], j) for j, l in enumerate(levels)]


def row_texts(question, options, table):
    """The texts of one row, in order: a string is tokenized, an int is a label token inserted."""
    head = "\n\nQuestion: " + question + "\nOptions:"
    if len(options) <= NARROW:
        return [head + "".join("\n(%s) %s" % (table["strings"][j], o) for j, o in enumerate(options)) + "\nAnswer: ("]
    if len(options) > len(table["ids"]):
        raise Refused("more options than labels")
    out = [head]
    for j, o in enumerate(options):
        out += ["\n(", table["ids"][j], ") " + o]
    return out + ["\nAnswer: ("]


def context_text(request):
    return "Context:\n" + state_text(request["state"])


def request_rows(request, table):
    rows = []
    for key, q in request["questions"]:
        for question, options, level in asked(q):
            rows.append((key, level, row_texts(question, options, table), len(options)))
    return rows


def segments(job):
    texts = set(label_candidates())
    for r in job["requests"]:
        texts.add(context_text(r))
        for key, q in r["questions"]:
            try:
                for question, options, _ in asked(q):
                    # the table is not known yet: both shapes' texts (a narrow row's letters are A..J)
                    head = "\n\nQuestion: " + question + "\nOptions:"
                    if len(options) <= NARROW:
                        texts.add(head + "".join("\n(%s) %s" % (chr(65 + j), o) for j, o in enumerate(options)) + "\nAnswer: (")
                    else:
                        texts.update([head, "\n(", "\nAnswer: ("] + [") " + o for o in options])
            except Refused:
                pass
    return sorted(texts)


def log_sigmoid(x):
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    s = sum(e)
    return [x / s for x in e]


def readout(request, rows, logits, job):
    """Per question, the answer's probabilities in the engine's order (choice: options; noul: [yes, no]; score: levels)."""
    tc, ts, tn = job.get("temperature", [1.0, 1.0, 1.0])
    trow = job.get("row_temperature", tn)
    at = job.get("answer_temperature", {})
    out = {}
    for key, q in request["questions"]:
        mine = [i for i, r in enumerate(rows) if r[0] == key]
        ls = [logits[i][:rows[i][3]] for i in mine]
        kind = q["type"]
        if kind == "choice":
            z = [l / tc for l in ls[0]]
        elif kind == "noul":
            z = [ls[0][1] / tn, ls[0][0] / tn]  # the row lists no (A), yes (B); answers read [yes, no]
        else:
            z = [log_sigmoid((l[1] - l[0]) / trow) / ts for l in ls]
        t = at.get(kind, 1.0)
        out[key] = softmax([x / t for x in z])
    return out


def layout(job):
    tokens = job["tokens"]
    table = label_table(tokens)
    results = []
    for r in job["requests"]:
        try:
            rows = request_rows(r, table)
        except Refused as e:
            results.append({"name": r["name"], "refused": str(e)})
            continue
        ctx = tokens[context_text(r)]
        res = {"name": r["name"], "ctx": ctx[:CONTEXT_TOKENS], "cut": len(ctx) > CONTEXT_TOKENS, "rows": []}
        for key, level, texts, n in rows:
            piece = []
            for t in texts:
                piece += [t] if isinstance(t, int) else tokens[t]
            row = {"key": key, "piece": piece, "slot": len(res["ctx"]) + len(piece) - 1, "labels": table["ids"][:n]}
            if level is not None:
                row["level"] = level
            res["rows"].append(row)
        if "label_logits" in r:
            res["probabilities"] = readout(r, rows, r["label_logits"], job)
        results.append(res)
    return {"labels": table, "results": results}


def readouts(job):
    """Each request's readout of its label logits (no tokens needed: a row's label count is its options')."""
    out = []
    for r in job["requests"]:
        rows = [(key, level, None, len(options)) for key, q in r["questions"] for _, options, level in asked(q)]
        out.append({"name": r["name"], "probabilities": readout(r, rows, r["label_logits"], job)})
    return {"results": out}


def main():
    job = json.load(sys.stdin)
    cmd = sys.argv[1]
    out = {"segments": segments(job)} if cmd == "segments" else readouts(job) if cmd == "readout" else layout(job)
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()

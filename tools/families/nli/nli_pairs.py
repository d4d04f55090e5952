#!/usr/bin/python3
"""Independent reference of the NLI pairs layout (`nli-pairs`) and its readout.

Written from the published rules of Hugging Face transformers' zero-shot classification
(src/transformers/pipelines/zero_shot_classification.py: the argument handler's pairs
[sequence, template.format(label)], `_parse_and_tokenize` with truncation `only_first` and its
"too short" fallback, `entailment_id`, `postprocess`), the tokenizers library's pair truncation
(the premise loses tokens from its end; it must keep one, else "too short"; special tokens count
against max_length) and TemplateProcessing, read to learn, not copied, and NOT from Assay's
TypeScript. The question-to-label rules are Assay's, from docs/families/nli-pairs.md. Python 3
standard library only (Debian's /usr/bin/python3).

Tokenization is the harness's job, in two passes:

  python3 nli_pairs.py segments < job.json   -> {"segments": {tokenizer name: [text, ...]}}
      every text this reference hands the tokenizer (premises and hypotheses, after rendering,
      serialising, neutralising and formatting), for every request of the job;
  python3 nli_pairs.py layout < job.json     -> {"results": [...]}
      the same job plus "tokens": {tokenizer name: {text: [ids]}}: rows, type ids, masks, cuts, refusals, and the
      readout of each request's fake logits (one list of logits per row).

job.json: {"tokenizers": {name: {"tokenizer_json": {...post_processor, added_tokens...},
                                 "tokenizer_config": {...}}},
           "models": {name: {"tokenizer": name, "nli_config": {...} | null, "config": {...}}},
           "requests": [{"name", "model", "state", "question", "logits"?}]}
A choice question's criteria come as a list of [name, description] pairs (the caller's order).
"""
import json
import math
import sys

PIPELINE_TEMPLATE = "This example is {}."
NOUL_TEMPLATE = "{}"
HUGE = 1000000


def as_text(value):
    """A string verbatim; anything else as json.dumps with non-ASCII kept (", " and ": ")."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def specials_of(tokenizer_json):
    return [t["content"] for t in tokenizer_json.get("added_tokens", []) if t.get("special")]


def neutralise(text, specials):
    # longest first, so a special that contains another is replaced whole
    for s in sorted(set(s for s in specials if s), key=len, reverse=True):
        text = text.replace(s, " ")
    return text


def pair_template(tokenizer_json):
    """[(kind, value, type_id)]: ("ids", [..], t) for special tokens, ("seq", "A"|"B", t)."""
    pp = tokenizer_json["post_processor"]
    out = []
    for piece in pp["pair"]:
        if "SpecialToken" in piece:
            tok = piece["SpecialToken"]
            out.append(("ids", pp["special_tokens"][tok["id"]]["ids"], tok.get("type_id", 0)))
        else:
            seq = piece["Sequence"]
            out.append(("seq", seq["id"], seq.get("type_id", 0)))
    return out


def uses_type_ids(tokenizer_config):
    names = tokenizer_config.get("model_input_names")
    return True if names is None else "token_type_ids" in names


def max_len_of(model):
    nli = model.get("nli_config") or {}
    if "max_len" in nli:
        return nli["max_len"]
    tok_cfg = model["tokenizer_config"]
    mml = tok_cfg.get("model_max_length")
    if isinstance(mml, int) and 1 <= mml < HUGE:
        return mml
    return model["config"]["max_position_embeddings"]


def templates_of(model):
    nli = model.get("nli_config") or {}
    base = nli.get("hypothesis_template", PIPELINE_TEMPLATE)
    per = nli.get("hypothesis_templates") or {}
    return {"choice": per.get("choice", base), "score": per.get("score", base), "noul": per.get("noul", NOUL_TEMPLATE)}


def labels_of(question):
    """(keys, labels): the text each row's hypothesis is made from."""
    kind = question["type"]
    crit = question.get("criteria")
    if kind == "choice":
        keys, labels = [], []
        for name, desc in crit:
            keys.append(name)
            labels.append(name if desc is None or desc == "" else name + ": " + as_text(desc))
        return keys, labels
    if kind == "score":
        return [str(i) for i in range(len(crit))], [as_text(c) for c in crit]
    yes = (crit or {}).get("true")
    statement = question.get("instructions") if yes is None or yes == "" else yes
    return ["true"], [as_text(statement)]


def texts(request, model, tokenizer):
    """(premise, [hypothesis per row], keys) as the tokenizer receives them."""
    specials = specials_of(tokenizer["tokenizer_json"])
    q = request["question"]
    keys, labels = labels_of(q)
    template = templates_of(model)[q["type"]]
    instructions = neutralise(as_text(q.get("instructions")), specials)
    premise = neutralise(as_text(request["state"]), specials)
    hyps = [template.format(neutralise(label, specials), instructions=instructions) for label in labels]
    return premise, hyps, keys


def build(request, model, tokenizer, tokens):
    premise, hyps, keys = texts(request, model, tokenizer)
    template = pair_template(tokenizer["tokenizer_json"])
    type_ids = uses_type_ids(tokenizer["tokenizer_config"])
    max_len = max_len_of(model)
    n_special = sum(len(v) for kind, v, _ in template if kind == "ids")
    a_full = tokens[premise]
    rows = []
    for i, h in enumerate(hyps):
        b = tokens[h]
        a = a_full
        cut = None
        total = len(a) + len(b) + n_special
        if total > max_len:
            over = total - max_len
            if not len(a) > over:
                # only_first cannot cut enough ("too short"); Assay refuses the request
                return {"refused": {"option": i, "hypothesisTokens": len(b) + n_special, "count": total, "limit": max_len}}
            a = a[: len(a) - over]
            cut = {"premise": {"kept": len(a), "total": len(a_full)}}
        ids, tt = [], []
        for kind, v, t in template:
            part = v if kind == "ids" else (a if v == "A" else b)
            ids += part
            tt += [t] * len(part)
        row = {"ids": ids}
        if type_ids:
            row["tokenTypeIds"] = tt
        row["attentionMask"] = [1] * len(ids)
        if cut:
            row["truncated"] = cut
        rows.append(row)
    return {"rows": rows, "options": keys}


def entailment_columns(config):
    label2id = config.get("label2id") or {name: int(i) for i, name in (config.get("id2label") or {}).items()}
    columns = max([int(i) for i in label2id.values()] + [int(i) for i in (config.get("id2label") or {})]) + 1
    if columns == 1:
        return columns, 0, 0
    entail = None
    for name, i in label2id.items():
        if name.lower().startswith("entail"):
            entail = int(i)
            break
    contra = columns - 1 if entail == 0 else 0   # numpy's -1 when entailment is column 0
    return columns, entail, contra


def softmax(xs):
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    s = sum(e)
    return [x / s for x in e]


def readout(kind, logits, config):
    columns, entail, contra = entailment_columns(config)
    ent = [row[entail] for row in logits]
    if kind == "noul":
        row = logits[0]
        p = 1 / (1 + math.exp(-row[0])) if columns == 1 else softmax([row[contra], row[entail]])[1]
        return {"entailment": ent, "mode": "row", "probabilities": [p], "best": 0, "noul": p}
    if len(logits) == 1:
        mode, probs = "row", [1.0]
    else:
        mode, probs = "options", softmax(ent)
    best = probs.index(max(probs))
    k = len(probs)
    if k < 2:
        conf = 1.0
    else:
        h = -sum(x * math.log(min(1.0, max(x, 1e-12))) for x in probs)
        conf = min(1.0, max(0.0, 1.0 - h / math.log(k)))
    out = {"entailment": ent, "mode": mode, "probabilities": probs, "best": best, "confidence": conf}
    if kind == "score":
        out["score"] = sum(i * x for i, x in enumerate(probs))
    return out


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    job = json.load(sys.stdin)
    models = job["models"]
    toks = job["tokenizers"]

    def parts(r):
        m = dict(models[r["model"]])
        t = toks[m["tokenizer"]]
        m["tokenizer_config"] = t["tokenizer_config"]
        return m, t

    if command == "segments":
        segments = {}
        for r in job["requests"]:
            m, t = parts(r)
            premise, hyps, _ = texts(r, m, t)
            mine = segments.setdefault(m["tokenizer"], [])
            seen = set(mine)
            for s in [premise] + hyps:
                if s not in seen:
                    seen.add(s)
                    mine.append(s)
        json.dump({"segments": segments}, sys.stdout, ensure_ascii=False)
    elif command == "layout":
        results = []
        for r in job["requests"]:
            m, t = parts(r)
            res = {"name": r["name"]}
            res.update(build(r, m, t, job["tokens"][m["tokenizer"]]))
            if "refused" not in res and r.get("logits") is not None:
                res["readout"] = readout(r["question"]["type"], r["logits"], m["config"])
            results.append(res)
        json.dump({"results": results}, sys.stdout, ensure_ascii=False)
    else:
        sys.exit("usage: nli_pairs.py segments|layout < job.json")


if __name__ == "__main__":
    main()

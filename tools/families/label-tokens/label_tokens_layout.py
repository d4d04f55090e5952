#!/usr/bin/python3
"""Independent reference of the label-token contracts (`label-tokens-v1`) and their readout.

Written from the written layout alone (docs/families/label-tokens.md: the contract file and its
defaults, the label tables, values as text, the rows cut at the templates' placeholders, the chat
split at a sentinel, the readout and the refusals), NOT from Assay's TypeScript. Python 3 standard
library, plus jinja2 (Debian: python3-jinja2) to render the folder's chat template as Hugging Face
transformers does (a sandboxed environment with trim_blocks / lstrip_blocks, its `tojson` filter
and `raise_exception`).

Tokenization is the harness's job, in two passes:

  python3 label_tokens_layout.py segments < job.json -> {"segments": [[text, "template"|"data"], ...]}
      every text this reference hands the tokenizer: "template" text is encoded as the template's
      (its added-token strings are control tokens), "data" as text (never a control token); the
      label candidates (A..ZZ, 0..9, the contract's lists) are data;
  python3 label_tokens_layout.py layout < job.json   -> {"labels": {...}, "results": [...]}
      the same job plus "tokens": {"template": {text: [ids]}, "data": {text: [ids]}}: per request
      its prefix, cut, rows (piece, label ids), or its refusal; with "label_logits": {name: [[l_j,
      ...] per row]} (the replica's forward at each row's slot) also the readout.

job.json: {"contract": decision.json's object, "tokenizer_config": the folder's tokenizer_config.json
           (its chat_template), "context": the model's context in tokens,
           "temperature": [t_choice, t_score, t_noul] | null,
           "requests": [{"name", "state", "questions": [[key, question], ...]}]}
A question is the wire's {type, instructions?, criteria?}; a choice's criteria are an object in the
caller's order.
"""
import json
import math
import sys

DEFAULT_LABELS = {"choice": "letters", "noul": ["A", "B"], "score": "digits"}
DEFAULT_NOUL = {"order": ["true", "false"], "true": "Yes", "false": "No"}
MAX_LABELS = 255
LEVELS = (2, 10)  # the protocol's score levels
SENTINEL = "\u2063assay-user-sentinel\u2063"
PLACEHOLDERS = ("{state}", "{question}", "{options}", "{label}", "{text}")


class Refused(Exception):
    """A 422: the limit's kind ("type", "options", "levels", "context")."""


class LoadError(Exception):
    pass


# ------------------------------------------------------------------ the contract file


def contract_of(decision):
    if decision.get("layout") != "label-tokens-v1":
        raise LoadError("layout")
    c = decision.get("contract")
    if not isinstance(c, dict):
        raise LoadError("contract")
    out = {
        "name": c.get("name", "label-tokens"),
        "types": c.get("types", ["choice", "noul", "score"]),
        "chat": c.get("chat"),
        "assistant_prefix": c.get("assistant_prefix", ""),
        "state": c["state"],
        "question": c["question"],
        "option": c["option"],
        "render": c.get("render", "text"),
        "state_tokens": c.get("state_tokens", 32768),
        "labels": {**DEFAULT_LABELS, **c.get("labels", {})},
        "max_options": c.get("max_options"),
        "noul": {**DEFAULT_NOUL, **c.get("noul", {})},
    }
    if out["state"].count("{state}") != 1 or any(p in out["state"] for p in PLACEHOLDERS if p != "{state}"):
        raise LoadError("state")
    if out["question"].count("{options}") != 1 or out["question"].count("{question}") > 1:
        raise LoadError("question")
    if out["option"].count("{label}") != 1 or out["option"].count("{text}") != 1:
        raise LoadError("option")
    if out["render"] not in ("text", "json"):
        raise LoadError("render")
    if sorted(out["noul"]["order"]) != ["false", "true"]:
        raise LoadError("noul")
    return out


def pieces(template, names):
    """The template cut at its placeholders `names`: [("lit", text) | ("ph", name)], empty literals dropped."""
    out, i, lit = [], 0, ""
    while i < len(template):
        hit = next((n for n in names if template.startswith(n, i)), None)
        if hit:
            if lit:
                out.append(("lit", lit))
            lit = ""
            out.append(("ph", hit))
            i += len(hit)
        else:
            lit += template[i]
            i += 1
    if lit:
        out.append(("lit", lit))
    return out


# ------------------------------------------------------------------ the chat split


def chat_split(contract, config):
    """(pre, post): the folder's chat template rendered around the sentinel user message, or ("", "")."""
    chat = contract["chat"]
    if chat is None:
        return None
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2 import ext

    template = config.get("chat_template")
    if isinstance(template, list):
        template = next(t["template"] for t in template if t.get("name") == "default")
    if not isinstance(template, str):
        raise LoadError("chat_template")

    def raise_exception(message):
        raise LoadError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    messages = []
    system = chat.get("system") or ""
    if system != "":
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": SENTINEL})

    def token(name):
        v = config.get(name)
        return v.get("content", "") if isinstance(v, dict) else (v or "")

    rendered = env.from_string(template).render(
        messages=messages,
        add_generation_prompt=True,
        enable_thinking=False,
        bos_token=token("bos_token"),
        eos_token=token("eos_token"),
        pad_token=token("pad_token"),
        unk_token=token("unk_token"),
    )
    if rendered.count(SENTINEL) != 1:
        raise LoadError("chat template writes the user message %d times" % rendered.count(SENTINEL))
    pre, post = rendered.split(SENTINEL)
    return pre, post


# ------------------------------------------------------------------ values as text


def dumps(v, render):
    if render == "json":
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(v, ensure_ascii=False)


def as_text(v, render):
    """A description or level as text: a string verbatim, anything else json.dumps with the render's separators."""
    return v if isinstance(v, str) else dumps(v, render)


def rendered(v, render):
    """A value written into a template: render "text" (strings verbatim) or "json" (every value, `<` escaped)."""
    if render == "json":
        return dumps(v, "json").replace("<", "\\u003c")
    return v if isinstance(v, str) else dumps(v, "text")


def described(d):
    return d is not None and d != ""


# ------------------------------------------------------------------ label tables


def letters():
    az = [chr(65 + i) for i in range(26)]
    return az + [a + b for a in az for b in az]


def candidates(contract):
    out = []
    for table in contract["labels"].values():
        out += letters() if table == "letters" else [str(d) for d in range(10)] if table == "digits" else list(table)
    return out


def label_tables(contract, data):
    """Per type: {"strings", "ids"} (the table's labels, each one token)."""
    tables = {}
    for kind, table in contract["labels"].items():
        if table == "letters":
            strings = []
            for s in letters():
                if len(strings) == MAX_LABELS:
                    break
                if len(data[s]) == 1:
                    strings.append(s)
                elif len(s) == 1:
                    raise LoadError("labels.%s: %s is not one token" % (kind, s))
        else:
            strings = [str(d) for d in range(10)] if table == "digits" else list(table)
            if table != "digits" and not (2 <= len(strings) <= MAX_LABELS and len(set(strings)) == len(strings)):
                raise LoadError("labels.%s" % kind)
            for s in strings:
                if len(data[s]) != 1:
                    raise LoadError("labels.%s: %s is not one token" % (kind, s))
        tables[kind] = {"strings": strings, "ids": [data[s][0] for s in strings]}
    if len(tables["noul"]["ids"]) < 2:
        raise LoadError("labels.noul")
    return tables


# ------------------------------------------------------------------ a request


def instructions(q, render):
    v = q.get("instructions")
    return ("" if render == "text" else '""') if v is None else rendered(v, render)


def option_texts(q, contract):
    """The options of a question in the order written: their strings s (before rendering)."""
    render = contract["render"]
    kind = q["type"]
    if kind == "choice":
        return [n + ": " + as_text(d, render) if described(d) else n for n, d in q["criteria"].items()]
    if kind == "score":
        return [as_text(level, render) for level in q["criteria"]]
    c = q.get("criteria") or {}
    words = contract["noul"]
    return [words[side] + ": " + as_text(c.get(side), render) if described(c.get(side)) else words[side]
            for side in words["order"]]


def check(q, contract, tables):
    """Raises Refused when the contract cannot answer q."""
    kind = q["type"]
    if kind not in contract["types"]:
        raise Refused("type")
    if kind == "choice":
        most = len(tables["choice"]["ids"])
        if contract["max_options"] is not None:
            most = min(most, contract["max_options"])
        if not 2 <= len(q["criteria"]) <= most:
            raise Refused("options")
    if kind == "score":
        n = len(q["criteria"])
        if not LEVELS[0] <= n <= LEVELS[1] or n > len(tables["score"]["ids"]):
            raise Refused("levels")


def question_parts(q, contract):
    """The question's row after the prefix, as parts: ("lit", text) | ("data", text) | ("label", j)."""
    render = contract["render"]
    out = []
    for kind, v in pieces(contract["question"], ("{question}", "{options}")):
        if kind == "lit":
            out.append(("lit", v))
        elif v == "{question}":
            out.append(("data", instructions(q, render)))
        else:
            for j, s in enumerate(option_texts(q, contract)):
                for k, w in pieces(contract["option"], ("{label}", "{text}")):
                    out.append(("lit", w) if k == "lit" else ("label", j) if w == "{label}" else ("data", rendered(s, render)))
    return out


def state_parts(state, contract):
    return [("lit", v) if k == "lit" else ("state", rendered(state, contract["render"]))
            for k, v in pieces(contract["state"], ("{state}",))]


# ------------------------------------------------------------------ the two passes


def segments(job):
    contract = contract_of(job["contract"])
    split = chat_split(contract, job.get("tokenizer_config", {}))
    out = {(s, "data") for s in candidates(contract)}
    if split:
        out |= {(split[0], "template"), (split[1], "template")}
    out.add((contract["assistant_prefix"], "template"))
    for r in job["requests"]:
        for k, v in state_parts(r["state"], contract):
            out.add((v, "template" if k == "lit" else "data"))
        for _, q in r["questions"]:
            if q["type"] not in contract["types"]:
                continue
            for k, v in question_parts(q, contract):
                if k != "label":
                    out.add((v, "template" if k == "lit" else "data"))
    return [[s, kind] for s, kind in sorted(out) if s != ""]


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    s = sum(e)
    return [x / s for x in e]


def readout(q, logits, contract, temperature):
    """The question's probabilities: choice in the options' order, score in level order, noul [P(true), P(false)]."""
    tc, ts, tn = temperature or [1, 1, 1]
    kind = q["type"]
    t = tc if kind == "choice" else ts if kind == "score" else tn
    p = softmax([l / t for l in logits])
    if kind == "noul":
        side = dict(zip(contract["noul"]["order"], p))
        return [side["true"], side["false"]]
    return p


def layout(job):
    contract = contract_of(job["contract"])
    template, data = job["tokens"]["template"], job["tokens"]["data"]
    enc_t = lambda s: template[s] if s else []  # noqa: E731
    enc_d = lambda s: data[s] if s else []  # noqa: E731
    tables = label_tables(contract, data)
    split = chat_split(contract, job.get("tokenizer_config", {}))
    pre, post = (enc_t(split[0]), enc_t(split[1])) if split else ([], [])
    tail = post + enc_t(contract["assistant_prefix"])
    context = job.get("context")
    logits = job.get("label_logits", {})
    results = []
    for r in job["requests"]:
        res = {"name": r["name"]}
        try:
            for _, q in r["questions"]:
                check(q, contract, tables)
            prefix, cut = list(pre), False
            for k, v in state_parts(r["state"], contract):
                if k == "lit":
                    prefix += enc_t(v)
                else:
                    ids = enc_d(v)
                    cut = len(ids) > contract["state_tokens"]
                    prefix += ids[: contract["state_tokens"]]
            rows = []
            for key, q in r["questions"]:
                table = tables[q["type"]]["ids"]
                piece = []
                for k, v in question_parts(q, contract):
                    piece += [table[v]] if k == "label" else enc_t(v) if k == "lit" else enc_d(v)
                piece += tail
                if context is not None and len(prefix) + len(piece) > context:
                    raise Refused("context")
                rows.append({"key": key, "piece": piece, "labels": table[: len(option_texts(q, contract))]})
        except Refused as e:
            res["refused"] = str(e)
            results.append(res)
            continue
        res.update(prefix=prefix, cut=cut, rows=rows)
        if r["name"] in logits:
            res["probabilities"] = {
                key: readout(q, l, contract, job.get("temperature"))
                for (key, q), l in zip(r["questions"], logits[r["name"]])
            }
        results.append(res)
    return {"labels": {k: v["ids"] for k, v in tables.items()}, "results": results}


def main():
    job = json.load(sys.stdin)
    out = {"segments": segments(job)} if sys.argv[1] == "segments" else layout(job)
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()

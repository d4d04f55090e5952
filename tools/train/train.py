#!/usr/bin/python3
"""Trains a tiny model: a Qwen2-shaped decoder (the "tiny" shape of models/shapes.json) on the rows
tools/train/write-data.ts tokenized, and writes its weights as safetensors in the generator's layout
(src/model-files/synth/weights.ts reads them; `assay models synth` writes the ONNX folder from them).
`--name` picks the data set: tiny-tasks (Assay's generic prompt) or tiny-decider (the same tickets
through the decider contract); its files are <data>/<name>-*.jsonl.

The forward below is the synthetic ONNX graph's (src/model-files/synth/decoder.ts) op for op: RMSNorm
x / sqrt(mean(x^2) + eps) * w, rotary embedding on the non-interleaved halves, grouped-query
attention with q/k/v biases and an additive -1e9 causal mask, SwiGLU MLP, final norm, head tied to
the embedding. The loss is cross-entropy over each row's candidate label tokens at the answer
position only: no full-vocabulary softmax. Only the token ids that occur are trained (a compact
vocabulary); every other embedding row is exactly zero and is not stored.

A row is one question (tiny-tasks; the decider's noul and choice), or one level of a score question
(the decider's isolated yes/no rows: `q` groups them, `level` and `answer` say which level the row
proposes and which is right, `yes` is the yes candidate's index): a score question's answer is the
level whose row says yes most, log sigmoid(l_yes - l_no).

With <data>/<name>-calibration.tokens.jsonl (a split of its own seed), the temperature per type
(choice, score, noul) is fitted on it after training by the rows' negative log-likelihood over a
grid, and written with <data>/<name>.folder.json's files into the metadata's `folder_files`
(calibration.json), which the generator copies into the model folder.

Needs PyTorch (Debian: apt-get install -y --no-install-recommends python3-torch). Never needed by
npm ci, npm start or npm test.

    /usr/bin/python3 tools/train/train.py [--name tiny-tasks] [--data models/generated/train] [--out models/trained/<name>.safetensors]
    /usr/bin/python3 tools/train/train.py --reference   # no training: the reference of the file --out names

After training (or alone, with --reference) it reads the weights file back and writes
<data>/<name>-heldout.reference.json: for every held-out row, its candidates' log-probabilities
over the FULL vocabulary at the answer position, as this forward computes them (the untrained rows'
logits are exactly 0, so the full log-sum-exp is exact). tools/train/check-onnx.ts compares
them with onnxruntime on the ONNX folder the generator writes from the same file.
"""
import argparse, json, math, os, random, struct, time
import torch
import torch.nn.functional as F

SHAPES = 'models/shapes.json'


def load_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Tiny(torch.nn.Module):
    def __init__(self, cfg, vocab):
        super().__init__()
        self.H, self.D = cfg['hidden_size'], cfg['head_dim']
        self.nH, self.kvH = cfg['num_attention_heads'], cfg['num_key_value_heads']
        self.I, self.L, self.eps = cfg['intermediate_size'], cfg['num_hidden_layers'], cfg['rms_norm_eps']
        D, H = self.D, self.H
        inv = [1.0 / math.pow(cfg['rope_theta'], (2 * i) / D) for i in range(D // 2)]
        self.register_buffer('inv_freq', torch.tensor(inv, dtype=torch.float32))
        p = torch.nn.Parameter
        self.embed = p(torch.randn(vocab, H) * (1 / math.sqrt(H)))
        lin = lambda i, o: p(torch.randn(i, o) / math.sqrt(i))  # graph orientation: x @ W, W [in, out]
        self.layers = torch.nn.ModuleList()
        for _ in range(self.L):
            m = torch.nn.Module()
            m.ln1 = p(torch.ones(H)); m.ln2 = p(torch.ones(H))
            m.q = lin(H, self.nH * D); m.k = lin(H, self.kvH * D); m.v = lin(H, self.kvH * D)
            m.qb = p(torch.zeros(self.nH * D)); m.kb = p(torch.zeros(self.kvH * D)); m.vb = p(torch.zeros(self.kvH * D))
            m.o = lin(self.nH * D, H)
            m.gate = lin(H, self.I); m.up = lin(H, self.I); m.down = lin(self.I, H)
            self.layers.append(m)
        self.norm = p(torch.ones(H))

    def rms(self, x, w):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps) * w

    def rope(self, x, cos, sin):
        h = self.D // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cos + rot * sin

    def hidden(self, ids):
        """ids [B, S] (compact) → final normed hidden [B, S, H]."""
        B, S = ids.shape
        D, nH, kvH = self.D, self.nH, self.kvH
        pos = torch.arange(S, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.full((S, S), -1e9).triu(1)
        x = self.embed[ids]
        for m in self.layers:
            h = self.rms(x, m.ln1)
            q = (h @ m.q + m.qb).view(B, S, nH, D).transpose(1, 2)
            k = (h @ m.k + m.kb).view(B, S, kvH, D).transpose(1, 2)
            v = (h @ m.v + m.vb).view(B, S, kvH, D).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            rep = nH // kvH
            k = k.repeat_interleave(rep, 1)  # query head h reads kv head h // rep
            v = v.repeat_interleave(rep, 1)
            att = torch.softmax(q @ k.transpose(-1, -2) * (1 / math.sqrt(D)) + mask, -1)
            a = (att @ v).transpose(1, 2).reshape(B, S, nH * D)
            x = x + a @ m.o
            h2 = self.rms(x, m.ln2)
            g = h2 @ m.gate
            x = x + (g * torch.sigmoid(g) * (h2 @ m.up)) @ m.down
        return self.rms(x, self.norm)


def batches(rows, size, shuffle):
    order = list(range(len(rows)))
    if shuffle:
        random.shuffle(order)
    for i in range(0, len(order), size):
        yield [rows[j] for j in order[i:i + size]]


def last_hidden(model, batch, cmap):
    """The final hidden state at each row's answer position (rows right-padded: causal, so padding is unseen)."""
    S = max(len(r['ids']) for r in batch)
    ids = torch.zeros(len(batch), S, dtype=torch.long)
    for b, r in enumerate(batch):
        ids[b, :len(r['ids'])] = torch.tensor([cmap[t] for t in r['ids']])
    h = model.hidden(ids)
    return h[torch.arange(len(batch)), torch.tensor([len(r['ids']) - 1 for r in batch])]


def step_logits(model, batch, cmap):
    last = last_hidden(model, batch, cmap)
    width = max(len(r['cands']) for r in batch)
    cands = torch.zeros(len(batch), width, dtype=torch.long)
    valid = torch.zeros(len(batch), width, dtype=torch.bool)
    for b, r in enumerate(batch):
        cands[b, :len(r['cands'])] = torch.tensor([cmap[t] for t in r['cands']])
        valid[b, :len(r['cands'])] = True
    logits = (last[:, None, :] * model.embed[cands]).sum(-1)
    return logits.masked_fill(~valid, -1e9)


TYPES = ['noul', 'choice', 'score']


def row_type(r, i):
    """A row's question type: its own `type`, else tiny-tasks' order (fact, pick, level per line)."""
    return r.get('type', TYPES[i % 3])


def all_logits(model, rows, cmap):
    """Each row's candidate logits (lists), in order."""
    out = []
    with torch.no_grad():
        for batch in batches(rows, 256, False):
            logits = step_logits(model, batch, cmap)
            out += [logits[b, :len(r['cands'])].tolist() for b, r in enumerate(batch)]
    return out


def question_accuracy(rows, logits):
    """Accuracy per question type: a row is a question, but score rows of one `q` (each a level's
    yes/no row) are one question, answered by the level whose l_yes - l_no is largest."""
    kinds, levels = {}, {}
    for i, (r, l) in enumerate(zip(rows, logits)):
        if 'level' in r:
            no = 1 - r['yes']
            levels.setdefault(r['q'], []).append((l[r['yes']] - l[no], r['level'], r['answer']))
            continue
        ok, n = kinds.get(row_type(r, i), (0, 0))
        kinds[row_type(r, i)] = (ok + int(max(range(len(l)), key=l.__getitem__) == r['target']), n + 1)
    for group in levels.values():
        best = max(group, key=lambda g: g[0])
        ok, n = kinds.get('score', (0, 0))
        kinds['score'] = (ok + int(best[1] == best[2]), n + 1)
    return {k: ok / n for k, (ok, n) in kinds.items()}


def accuracy(model, rows, cmap):
    return question_accuracy(rows, all_logits(model, rows, cmap))


CALIBRATION_TYPES = ['choice', 'score', 'noul']
GRID = [round(0.25 * math.pow(2, i / 16), 4) for i in range(65)]  # 0.25 .. 4, 2^(1/16) apart


def fit_temperatures(rows, logits):
    """Per type, the grid temperature that minimizes the mean negative log-likelihood of the rows'
    targets under softmax(logits / T) (a score row: its yes/no pair, i.e. log sigmoid)."""
    fitted = {}
    for t in CALIBRATION_TYPES:
        mine = [(r, l) for i, (r, l) in enumerate(zip(rows, logits)) if row_type(r, i) == t]
        if not mine:
            continue
        def nll(T):
            return sum(torch.logsumexp(torch.tensor(l, dtype=torch.float64) / T, 0).item() - l[r['target']] / T
                       for r, l in mine) / len(mine)
        losses = {T: nll(T) for T in GRID}
        best = min(GRID, key=losses.__getitem__)
        fitted[t] = {'temperature': best, 'nll': round(losses[best], 6), 'nll_at_1': round(nll(1.0), 6),
                     'rows': len(mine), 'on_grid_edge': best in (GRID[0], GRID[-1])}
    return fitted


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {'__metadata__': metadata}, [], 0
    for name, (dtype, t) in tensors.items():
        data = t.contiguous().numpy().astype('<f4' if dtype == 'F32' else '<i4').tobytes()
        header[name] = {'dtype': dtype, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """The tensors of a safetensors file (F32 / I32 only) and its metadata."""
    import numpy as np
    with open(path, 'rb') as f:
        data = f.read()
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop('__metadata__', {})
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        start, end = e['data_offsets']
        dt = {'F32': '<f4', 'I32': '<i4'}[e['dtype']]
        out[name] = torch.from_numpy(np.frombuffer(body[start:end], dtype=dt).copy().reshape(e['shape']))
    return out, metadata


def load_model(cfg, path):
    """The Tiny model of a weights file (compact vocabulary: the file's embedding rows) and its token ids."""
    t, _ = read_safetensors(path)
    used = [int(i) for i in t['model.embed_tokens.ids']]
    model = Tiny(cfg, len(used))
    with torch.no_grad():
        model.embed.copy_(t['model.embed_tokens.rows'])
        model.norm.copy_(t['model.norm.weight'])
        for i, m in enumerate(model.layers):
            for name, param in layer_tensors(m):
                param.copy_(t[f'model.layers.{i}.{name}'])
    return model, used


def layer_tensors(m):
    return [('input_layernorm.weight', m.ln1), ('post_attention_layernorm.weight', m.ln2),
            ('self_attn.q_proj.weight', m.q), ('self_attn.k_proj.weight', m.k), ('self_attn.v_proj.weight', m.v),
            ('self_attn.q_proj.bias', m.qb), ('self_attn.k_proj.bias', m.kb), ('self_attn.v_proj.bias', m.vb),
            ('self_attn.o_proj.weight', m.o), ('mlp.gate_proj.weight', m.gate), ('mlp.up_proj.weight', m.up), ('mlp.down_proj.weight', m.down)]


def full_logps(model, used, vocab_size, rows):
    """Each row's candidate log-probabilities over the full vocabulary (float64 from float32 logits)."""
    cmap = {t: i for i, t in enumerate(used)}
    unseen = vocab_size - len(used)  # rows that are exactly zero: logit 0 each
    out = []
    with torch.no_grad():
        for batch in batches(rows, 64, False):
            last = last_hidden(model, batch, cmap)
            logits = (last @ model.embed.T).double()  # [B, R]
            extra = torch.full((len(batch), 1), math.log(unseen), dtype=torch.float64)
            lse = torch.logsumexp(torch.cat([logits, extra], -1), -1)
            for b, r in enumerate(batch):
                out.append([float(logits[b, cmap[c]] - lse[b]) for c in r['cands']])
    return out


def write_reference(cfg, weights, rows, path):
    """The reference file of a weights file: full_logps of every held-out row."""
    model, used = load_model(cfg, weights)
    out = full_logps(model, used, cfg['vocab_size'], rows)
    with open(path, 'w') as f:
        json.dump({'weights': weights, 'rows': len(rows), 'logps': out}, f)
    print(f'wrote {path}: full-vocabulary candidate log-probabilities of {len(rows)} held-out rows')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--name', default='tiny-tasks', help='the data set: <data>/<name>-*.jsonl (tiny-tasks, tiny-decider)')
    ap.add_argument('--data', default='models/generated/train')
    ap.add_argument('--out', help='default models/trained/<name>.safetensors')
    ap.add_argument('--epochs', type=int, default=6)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--init', help='start from this weights file (same data, so the same compact vocabulary) instead of random weights')
    ap.add_argument('--lr', type=float, default=3e-3, help='the one-cycle schedule\'s max learning rate')
    ap.add_argument('--reference', action='store_true', help='no training: write the reference log-probabilities of the weights file --out names')
    a = ap.parse_args()
    out_file = a.out or f'models/trained/{a.name}.safetensors'
    torch.manual_seed(a.seed); random.seed(a.seed)
    torch.set_num_threads(1)  # measured faster than 2 on this tiny model (2 cores)
    cfg = json.load(open(SHAPES))['tiny']['config']
    files = lambda part: f'{a.data}/{a.name}-{part}'
    train = load_rows(files('train.tokens.jsonl'))
    held = load_rows(files('heldout.tokens.jsonl'))
    calibration_file = files('calibration.tokens.jsonl')
    calibration = load_rows(calibration_file) if os.path.exists(calibration_file) else []
    contract_file = f'{a.data}/{a.name}.folder.json'  # the model folder's files and task, from write-data.ts
    contract = json.load(open(contract_file)) if os.path.exists(contract_file) else {}
    reference_file = files('heldout.reference.json')
    if a.reference:
        write_reference(cfg, out_file, held, reference_file)
        return
    used = sorted({t for r in train + held + calibration for t in r['ids'] + r['cands']})
    cmap = {t: i for i, t in enumerate(used)}
    model = Tiny(cfg, len(used))
    if a.init:
        model, init_used = load_model(cfg, a.init)
        if init_used != used:
            raise SystemExit(f'{a.init} was trained on another vocabulary: --init needs the same data')
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    steps = a.epochs * math.ceil(len(train) / 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=steps, pct_start=0.1)
    t0 = time.time()
    for epoch in range(a.epochs):
        total = 0.0
        for batch in batches(train, 64, True):
            logits = step_logits(model, batch, cmap)
            loss = F.cross_entropy(logits, torch.tensor([r['target'] for r in batch]))
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            total += loss.item() * len(batch)
        print(f'epoch {epoch + 1}/{a.epochs}: loss {total / len(train):.4f}, held-out accuracy {accuracy(model, held, cmap)}, {time.time() - t0:.0f} s', flush=True)
    seconds = round(time.time() - t0)

    # Reference answers of the first held-out questions (candidate probabilities), for the test that
    # the ONNX graph written from these weights computes what this forward does.
    with torch.no_grad():
        ref = torch.softmax(step_logits(model, held[:9], cmap), -1)
    reference = [[round(float(p), 7) for p in row[:len(r['cands'])]] for row, r in zip(ref, held[:9])]
    tensors = {
        'model.embed_tokens.ids': ('I32', torch.tensor(used, dtype=torch.int32)),
        'model.embed_tokens.rows': ('F32', model.embed.detach()),
        'model.norm.weight': ('F32', model.norm.detach()),
    }
    for i, m in enumerate(model.layers):
        p = f'model.layers.{i}'
        for name, t in layer_tensors(m):
            tensors[f'{p}.{name}'] = ('F32', t.detach())
    final = accuracy(model, held, cmap)
    metadata = {
        'format': 'assay tiny-tasks weights: linear weights [in, out] (x @ W, as the ONNX graph); embedding rows only for the ids listed, every other row zero',
        'shape': 'tiny',
        'task': contract.get('task', 'tiny-tasks (tools/train/tiny-tasks.ts)'),
        'train_rows': str(len(train)),
        'epochs': str(a.epochs),
        **({'init': f'{os.path.basename(a.init)}: {read_safetensors(a.init)[1].get("epochs")} epochs, then these ({a.lr} max lr)'} if a.init else {}),
        'seconds': str(seconds),
        'heldout_accuracy': json.dumps(final),
        'reference': json.dumps(reference),
    }
    folder_files = dict(contract.get('files', {}))
    if calibration:
        fitted = fit_temperatures(calibration, all_logits(model, calibration, cmap))
        print(f'calibration ({len(calibration)} rows): {fitted}')
        metadata['calibration_fit'] = json.dumps(fitted)
        # The contract's calibration.json is [t_choice, t_score, t_noul]; a score question's isolated
        # yes/no rows have their own temperature (decision.json isolated_row_temperature), fitted on
        # those rows, and t_score stays 1 (the levels' P(fits) normalized as they are).
        how = (f'fitted on the calibration split ({len(calibration)} rows, seed {contract.get("calibration_seed")}) by tools/train/train.py: '
               'per type, the temperature of a grid from 0.25 to 4 (2^(1/16) apart) that minimizes the rows\' mean negative log-likelihood')
        folder_files['calibration.json'] = {'temperature': [fitted['choice']['temperature'], 1, fitted['noul']['temperature']], 'note': how}
        folder_files['decision.json'] = {**folder_files.get('decision.json', {}), 'isolated_row_temperature': fitted['score']['temperature']}
    if folder_files:
        metadata['folder_files'] = json.dumps(folder_files)
        # Every held-out row's full-vocabulary log-probabilities: the parity test's reference.
        metadata['heldout_logps'] = json.dumps([[round(x, 7) for x in row] for row in full_logps(model, used, cfg['vocab_size'], held)])
    write_safetensors(out_file, tensors, metadata)
    print(f'wrote {out_file}: {len(used)} embedding rows, held-out accuracy {final}, {seconds} s')
    write_reference(cfg, out_file, held, reference_file)  # from the file just written: its round trip too


if __name__ == '__main__':
    main()

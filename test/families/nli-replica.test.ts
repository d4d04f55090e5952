// The NLI replicas (tools/families/nli/replica.ts) against an independent forward pass in numpy
// (tools/families/nli/nli_forward.py), on rows the landed layout builds from each folder's own files
// (nliTokenizer, readNliConfig, nliLayout, nliBatch): the fp32 graphs give the reference's logits,
// the int8 graph stays within the quantization bound, padding is inert, the tokenizer.json's baked
// truncation would have cut the rows, and a layout bug moves the logits far past the tolerance.
// docs/families/nli-pairs.md, "The replica".
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { ModelManifestSchema } from '../../src/engine/index.js';
import { readNliConfig } from '../../src/engine/families/nli/config.js';
import {
  NLI_RULES,
  nliBatch,
  nliLayout,
  type NliQuestion,
  type NliRow,
  type NliRules,
  type PairPiece,
} from '../../src/engine/families/nli/layout.js';
import { nliTokenizer, type LoadedNliTokenizer } from '../../src/engine/families/nli/tokenizer.js';
import type { Content } from '../../src/engine/types.js';
import {
  ensureNliReplica,
  NLI_FLAVORS,
  NLI_SHAPES,
  nliParameters,
  nliReplicaGraphs,
  type NliFlavor,
} from '../../tools/families/nli/replica.js';
import { graphIo, hasNumpy, PYTHON } from './replica-helpers.js';

const REFERENCE = join(import.meta.dirname, '..', '..', 'tools', 'families', 'nli', 'nli_forward.py');
const numpy = hasNumpy("the NLI replica's comparison with the numpy reference");

// fp32 against the float64 reference, derived from rounding alone. onnxruntime rounds every
// operation to float32 (u = 2^-24 ≈ 6.0e-8); a reduction of n terms errs by at most n·u times the
// sum of its terms' magnitudes. Every reduction here reads O(1) values (LayerNorm outputs, softmax
// weights, weights of std ≤ 2/√n), so a stage's worst relative error is n·u: attention (softmax
// sums and weighted values over n ≤ 1,024 keys) 1,024u ≈ 6.1e-5 each, the 2 of them 1.2e-4; the
// ~14 other stages (dense layers n ≤ 64, LayerNorm means over 32, GELU's erf, a few ulp each)
// ≤ 64u ≈ 3.8e-6 each, 5.4e-5 in all. Errors pass a LayerNorm divided by its input's spread
// (≥ 1/2 here: residual sums of O(1) parts), so at worst doubled: the pooled state errs by
// ≤ 2·(1.2e-4 + 5.4e-5) ≈ 3.5e-4 relative, and a logit by that much of its own size plus the
// classifier's bias: |Δ| ≤ 4e-4 · (1 + |logit|). A worst case: typical errors are ~100× smaller.
const FP32_REL = 4e-4;
const fp32Bound = (logit: number): number => FP32_REL * (1 + Math.abs(logit));

const FLAVORS = ['deberta', 'modernbert'] as const satisfies readonly NliFlavor[];

const letters = [...'ABCDEFGHIJ'];
/** Ten requests of every kind the layout makes; the last state is past both folders' max_len. */
const requests: Array<[string, NliQuestion, Content]> = [
  [
    'choice with descriptions',
    {
      type: 'choice',
      instructions: 'What is the main topic?',
      options: [
        ['billing', 'invoices and refund money'],
        ['delivery', null],
        ['damage', ''],
      ],
    },
    'The order arrived two days late and the box was damaged.',
  ],
  [
    'choice of ten',
    { type: 'choice', instructions: 'Which letter?', options: letters.map((l) => [l, null] as const) },
    'The answer is the third one, C.',
  ],
  ['choice of one', { type: 'choice', instructions: 'Pick it.', options: [['only', 'the one option']] }, 'a state'],
  [
    'score of three',
    { type: 'score', instructions: 'How severe is the complaint?', criteria: ['minor', 'serious', 'very serious'] },
    'I am very upset: this is the second time the product was damaged.',
  ],
  [
    'score of five, object state',
    {
      type: 'score',
      instructions: 'How calm is the customer?',
      criteria: ['calm', 'fine', { level: 'annoyed' }, 'upset', 'angry'],
    },
    { ticket: 42, text: 'where is my order', tags: ['shipping', 'late'], vip: true, score: 2.5 },
  ],
  ['noul plain', { type: 'noul', instructions: 'The customer asks for a refund.' }, 'Please send my money back.'],
  [
    'noul with criteria, array state',
    { type: 'noul', instructions: 'Refund?', criteria: { true: 'asks for money back', false: 'does not' } },
    ['hello', 'I want a refund', null, 3],
  ],
  [
    'noul with empty criteria',
    { type: 'noul', instructions: 'The text is about shipping.', criteria: { true: '', false: null } },
    'Where is my parcel?',
  ],
  [
    'CJK',
    {
      type: 'choice',
      instructions: '主な話題は何ですか？',
      options: [
        ['返金', '顧客は返金を希望'],
        ['配送', null],
      ],
    },
    '注文番号一二三の商品が届きました。箱が破損していました。',
  ],
  [
    'state past max_len',
    {
      type: 'choice',
      instructions: 'What is the main topic?',
      options: [
        ['billing', null],
        ['delivery', null],
      ],
    },
    Array.from({ length: 120 }, (_, i) => `line ${i}: the order arrived late and the box was damaged.`).join(' '),
  ],
];

interface Folder {
  flavor: NliFlavor;
  dir: string;
  tokenizerJson: Record<string, unknown>;
  tok: LoadedNliTokenizer;
  config: ReturnType<typeof readNliConfig>;
  /** Each request's rows, in order. */
  rows: NliRow[][];
}

function open(flavor: NliFlavor): Folder {
  const dir = ensureNliReplica(flavor);
  const read = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
  const tokenizerJson = read('tokenizer.json');
  const tokenizerConfig = read('tokenizer_config.json');
  const tok = nliTokenizer(tokenizerJson, tokenizerConfig);
  const config = readNliConfig({ tokenizerConfig, modelConfig: read('config.json') });
  const rows = requests.map(([, q, state]) => nliLayout(q, state, tok, config).rows);
  return { flavor, dir, tokenizerJson, tok, config, rows };
}

type Logits = number[][];

/** The graph's inputs for a padded batch; token_type_ids only when the graph reads them. */
function feeds(f: Folder, rows: readonly NliRow[], inputs: readonly string[]): Record<string, ort.Tensor> {
  const batch = nliBatch(rows, f.tok.padId);
  const tensor = (m: number[][]) =>
    new ort.Tensor('int64', BigInt64Array.from(m.flat(), BigInt), [rows.length, batch.length]);
  const out: Record<string, ort.Tensor> = {
    input_ids: tensor(batch.inputIds),
    attention_mask: tensor(batch.attentionMask),
  };
  if (inputs.includes('token_type_ids')) {
    if (!batch.tokenTypeIds) throw new Error('the graph reads token_type_ids, the rows have none');
    out.token_type_ids = tensor(batch.tokenTypeIds);
  }
  return out;
}

async function run(f: Folder, session: ort.InferenceSession, rows: readonly NliRow[]): Promise<Logits> {
  const { logits } = await session.run(feeds(f, rows, session.inputNames));
  const [b = 0, n = 0] = logits!.dims;
  const data = Array.from(logits!.data as Float32Array);
  return Array.from({ length: b }, (_, i) => data.slice(i * n, (i + 1) * n));
}

function reference(f: Folder, rows: readonly NliRow[]): Logits {
  const batch = nliBatch(rows, f.tok.padId);
  const input = JSON.stringify({
    input_ids: batch.inputIds,
    attention_mask: batch.attentionMask,
    ...(batch.tokenTypeIds ? { token_type_ids: batch.tokenTypeIds } : {}),
  });
  const out = spawnSync(PYTHON, [REFERENCE, f.dir], { input, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (out.status !== 0) throw new Error(`nli_forward.py failed: ${out.stderr}`);
  return (JSON.parse(out.stdout) as { logits: Logits }).logits;
}

/** max |a − b| over all cells. */
function maxDiff(a: Logits, b: Logits): number {
  return Math.max(...a.map((row, i) => Math.max(...row.map((x, j) => Math.abs(x - b[i]![j]!)))));
}

/** Every request's rows with another pair template or rules: a layout bug. */
function buggyRows(f: Folder, change: (pair: readonly PairPiece[]) => PairPiece[], rules?: NliRules): NliRow[][] {
  const tok = { ...f.tok, pair: change(f.tok.pair) };
  return requests.map(([, q, state]) => nliLayout(q, state, tok, f.config, rules).rows);
}

/** Premise and hypothesis of a layout row ([CLS] A [SEP] B [SEP]: the pieces' lengths are known). */
function sides(f: Folder, row: NliRow): { premise: number[]; hypothesis: number[] } {
  const [cls, , sep] = f.tok.pair.map((p) => ('special' in p ? p.special.length : 0));
  const end = row.ids.lastIndexOf(row.ids.at(-1)!, row.ids.length - 2);
  return { premise: row.ids.slice(cls, end), hypothesis: row.ids.slice(end + sep!, -1) };
}

/**
 * What a tokenizer that honours tokenizer.json's `truncation` and `padding` would feed (the
 * tokenizers library, Python or Rust): the pair cut `LongestFirst` to max_length with the special
 * tokens counted (the longer side first: the shorter keeps its length when it fits in half, else
 * both get half), then padded to the fixed length.
 */
function bakedRow(f: Folder, premise: number[], hypothesis: number[]): NliRow {
  const { truncation, padding } = f.tokenizerJson as {
    truncation: { max_length: number };
    padding: { strategy: { Fixed: number }; pad_id: number };
  };
  const specials = f.tok.pair.reduce((n, p) => n + ('special' in p ? p.special.length : 0), 0);
  const room = truncation.max_length - specials;
  let [a, b] = [premise.length, hypothesis.length];
  if (a + b > room) {
    const short = Math.min(a, b);
    const [keepShort, keepLong] =
      short <= Math.floor(room / 2) ? [short, room - short] : [Math.floor(room / 2), room - Math.floor(room / 2)];
    [a, b] = a <= b ? [keepShort, keepLong] : [keepLong, keepShort];
  }
  const ids: number[] = [];
  const types: number[] = [];
  for (const piece of f.tok.pair) {
    const part =
      'special' in piece ? piece.special : piece.sequence === 'A' ? premise.slice(0, a) : hypothesis.slice(0, b);
    ids.push(...part);
    types.push(...part.map(() => piece.typeId));
  }
  const pad = padding.strategy.Fixed - ids.length;
  const row: NliRow = {
    ids: [...ids, ...Array<number>(pad).fill(padding.pad_id)],
    attentionMask: [...ids.map(() => 1), ...Array<number>(pad).fill(0)],
  };
  if (f.tok.typeIds) row.tokenTypeIds = [...types, ...Array<number>(pad).fill(0)];
  return row;
}

describe.each(FLAVORS)('the NLI replica, %s', (flavor) => {
  const f = open(flavor);
  const graphs = nliReplicaGraphs(flavor);
  const all = f.rows.flat();
  let fp32: ort.InferenceSession;
  /** Each request's rows as one padded batch. */
  let perRequest: Logits[];
  beforeAll(async () => {
    fp32 = await ort.InferenceSession.create(join(f.dir, graphs.fp32), { logSeverityLevel: 3 });
    perRequest = [];
    for (const rows of f.rows) perRequest.push(await run(f, fp32, rows));
  });

  it('is laid out as the published exports, with their graph I/O', () => {
    const files =
      flavor === 'deberta' ? ['onnx/model.onnx', 'onnx/model.onnx_data', 'onnx/model_quantized.onnx'] : ['model.onnx'];
    for (const file of [...files, 'config.json', 'tokenizer.json', 'tokenizer_config.json', 'weights.safetensors'])
      expect(existsSync(join(f.dir, file)), file).toBe(true);
    const io = (file: string) => graphIo(join(f.dir, file));
    const text = ['input_ids', 'attention_mask', ...(flavor === 'deberta' ? ['token_type_ids'] : [])];
    const labels = NLI_FLAVORS[flavor].labels.length;
    const expected = {
      inputs: text.map((name) => `${name}:7[batch_size,sequence_length]`),
      outputs: [`logits:1[batch_size,${labels}]`],
    };
    const main = io(graphs.fp32);
    expect(main).toMatchObject({ ...expected, external: flavor === 'deberta' ? ['model.onnx_data'] : [] });
    expect(main.ops.has('MatMulInteger')).toBe(false);
    if (graphs.int8) {
      const q = io(graphs.int8);
      expect(q).toMatchObject({ ...expected, external: [] });
      for (const op of ['DynamicQuantizeLinear', 'MatMulInteger', 'DequantizeLinear']) expect(q.ops.has(op)).toBe(true);
    }
  });

  it('says what it is: config labels in the exports’ order, assay.json accepted as synthetic', () => {
    const manifest = ModelManifestSchema.parse(JSON.parse(readFileSync(join(f.dir, 'assay.json'), 'utf8')));
    expect(manifest).toMatchObject({ synthetic: true, generator: 'nli-replica', seed: expect.any(Number) });
    expect(manifest.warning).toMatch(/MEANINGLESS/);
    expect(f.config.labels).toEqual(
      flavor === 'deberta'
        ? { columns: 3, entailment: 1, contradiction: 0 }
        : { columns: 2, entailment: 0, contradiction: 1 },
    );
    expect([f.config.maxLen, f.config.maxLenFrom]).toEqual([NLI_FLAVORS[flavor].positions, 'tokenizer_config.json']);
    expect(f.tok.typeIds).toBe(flavor === 'deberta');
  });

  it('runs rows of every kind, the last state cut to max_len', () => {
    expect(f.rows.map((r) => r.length)).toEqual([3, 10, 1, 3, 5, 1, 1, 1, 2, 2]);
    const long = f.rows.at(-1)!;
    for (const r of long) {
      expect(r.ids).toHaveLength(f.config.maxLen);
      expect(r.truncated!.premise.kept).toBeLessThan(r.truncated!.premise.total);
    }
    expect(f.rows.slice(0, -1).every((rs) => rs.every((r) => !r.truncated))).toBe(true);
    for (const l of perRequest.flat(2)) expect(Number.isFinite(l)).toBe(true);
  });

  it.skipIf(!numpy)('gives the numpy reference logits (fp32, within the rounding bound)', () => {
    let worst = 0;
    let diff = 0;
    f.rows.forEach((rows, i) => {
      const ref = reference(f, rows);
      ref.forEach((row, r) =>
        row.forEach((x, c) => {
          const d = Math.abs(perRequest[i]![r]![c]! - x);
          diff = Math.max(diff, d);
          worst = Math.max(worst, d / fp32Bound(x));
        }),
      );
    });
    const size = Math.max(...perRequest.flat(2).map(Math.abs));
    console.log(
      `${flavor} fp32 vs numpy: max |Δ| ${diff.toExponential(2)} (logits up to ${size.toFixed(2)}), ` +
        `${(worst * 100).toFixed(3)}% of the bound`,
    );
    expect(worst).toBeLessThan(1);
  });

  it('pads: all rows in one batch (padded to the longest, mask 0) give each row alone', async () => {
    // Padded keys get weight exactly 0 (exp(−1e4) underflows), so each of the two runs is within
    // the fp32 bound of the exact logits: they are within twice that of each other.
    const batched = await run(f, fp32, all);
    const single: Logits = [];
    for (const r of all) single.push((await run(f, fp32, [r]))[0]!);
    const excess = (a: Logits, b: Logits) =>
      Math.max(...b.flatMap((row, i) => row.map((x, c) => Math.abs(a[i]![c]! - x) / (2 * fp32Bound(x)))));
    console.log(
      `${flavor} batched (${all.length} rows, ${Math.max(...all.map((r) => r.ids.length))} long) vs one by one: ` +
        `max |Δ| ${maxDiff(batched, single).toExponential(2)}; per request ${maxDiff(perRequest.flat(), single).toExponential(2)}`,
    );
    expect(excess(batched, single)).toBeLessThan(1);
    expect(excess(perRequest.flat(), single)).toBeLessThan(1);
  });

  it.skipIf(!graphs.int8)('int8 (dynamic quantization) stays within its bound of fp32', async () => {
    // quantize_dynamic rounds each weight to 1/127 of its tensor's largest (triangular weights:
    // largest √6·σ, so an rms error of √6σ/127/√12 ≈ 0.56% of σ) and each activation at run time
    // to 1/255 of its tensor's range (LayerNorm outputs span at most ~±4: rms error 8/255/√12 ≈
    // 0.9% of their rms of 1). A product's relative rms error is then √(0.56² + 0.9²) ≈ 1.1%,
    // independent from product to product. A logit passes 12 of them in series (per layer: query
    // and key, value, attention output, two MLP; then pooler, classifier) and the int8 embedding
    // tables (0.56%): √13 · 1.1% ≈ 4%. Attention turns the query and key errors (1.1% each, on
    // scores of spread ~4) into a score error of ~0.06, so ~6% relative error of the weights, in
    // each of 2 layers: √(4² + 2·6²) ≈ 9.4% of the logits' rms. Bound: rms |Δ| ≤ 15% of the fp32
    // logits' rms, and each logit within 5 of those (a max over ~100 cells of a Gaussian is ~3σ):
    // |Δ| ≤ 0.75·rms(fp32). A wrong scale, a transposed weight or a lost zero point breaks both.
    const q = await ort.InferenceSession.create(join(f.dir, graphs.int8!), { logSeverityLevel: 3 });
    const a = perRequest.flat();
    const b: Logits = [];
    for (const rows of f.rows) b.push(...(await run(f, q, rows)));
    const cells = a.flatMap((row, i) => row.map((x, c) => [x, b[i]![c]!] as const));
    const rms = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + x * x, 0) / xs.length);
    const size = rms(cells.map(([x]) => x));
    const err = rms(cells.map(([x, y]) => x - y));
    const max = maxDiff(a, b);
    console.log(
      `${flavor} int8 vs fp32: rms |Δ| ${err.toFixed(4)} = ${((err / size) * 100).toFixed(1)}% of the logits' rms ` +
        `${size.toFixed(3)}, max |Δ| ${max.toFixed(4)}`,
    );
    expect(err / size).toBeLessThan(0.15);
    expect(max).toBeLessThan(0.75 * size);
  });

  it('the baked truncation of tokenizer.json would cut rows to 16 tokens; nliTokenizer does not', async () => {
    const { truncation, padding } = f.tokenizerJson as { truncation: unknown; padding: unknown };
    expect(truncation).toMatchObject({ max_length: 16, strategy: 'LongestFirst' });
    expect(padding).toMatchObject({ strategy: { Fixed: 16 } });
    expect(f.tok.disabled).toEqual(['truncation', 'padding']);
    // The library Assay uses applies neither setting (a pair encodes past 16 tokens); the tokenizers
    // library (Python, Rust) and so other runtimes of the same folder do: bakedRow makes its row.
    const [text, hypothesis] = [requests[0]![2] as string, 'This example is billing: invoices and refund money.'];
    const naive = new Tokenizer(f.tokenizerJson, {}).encode(text, { text_pair: hypothesis });
    expect(naive.ids.length).toBeGreaterThan(16);
    const layout = f.rows[0]![0]!;
    expect(layout.ids).toEqual(naive.ids);
    const s = sides(f, layout);
    expect(s).toEqual({ premise: f.tok.encode(text), hypothesis: f.tok.encode(hypothesis) });
    const cut = bakedRow(f, s.premise, s.hypothesis);
    expect(cut.ids).toHaveLength(16);
    const [ours] = await run(f, fp32, [layout]);
    const [theirs] = await run(f, fp32, [cut]);
    const moved = maxDiff([ours!], [theirs!]);
    console.log(`${flavor}: the row as the file's truncation cuts it moves the logits by ${moved.toFixed(3)}`);
    expect(moved).toBeGreaterThan(50 * fp32Bound(Math.max(...ours!.map(Math.abs))));
  });

  it('a layout bug moves the logits far past the tolerance', async () => {
    const swap = (x: PairPiece): PairPiece =>
      'sequence' in x ? { ...x, sequence: x.sequence === 'A' ? 'B' : 'A' } : x;
    const bugs: Array<[string, NliRow[][]]> = [
      ['premise and hypothesis swapped', buggyRows(f, (p) => p.map(swap))],
      ['the [SEP] between them lost', buggyRows(f, (p) => p.filter((_, i) => i !== 2))],
      ['the premise cut at its start', buggyRows(f, (p) => [...p], { ...NLI_RULES, cutPremise: 'start' })],
    ];
    if (f.tok.typeIds) bugs.push(['token type ids all 0', buggyRows(f, (p) => p.map((x) => ({ ...x, typeId: 0 })))]);
    // Every request whose rows a bug changes must move far past the rounding bound, except where
    // it changes one token of a row: the lost [SEP] of a row cut to max_len (the premise takes the
    // freed place, every other token stays): one key of hundreds moves [CLS] little (logged).
    const differing = (a: NliRow, b: NliRow) =>
      a.ids.filter((id, k) => id !== b.ids[k] || a.tokenTypeIds?.[k] !== b.tokenTypeIds?.[k]).length;
    const oneToken = (a: NliRow[], b: NliRow[]) =>
      a.every((r, j) => r.ids.length === b[j]!.ids.length && differing(r, b[j]!) <= 1);
    const lines: string[] = [];
    for (const [name, buggy] of bugs) {
      const moves: string[] = [];
      for (let i = 0; i < requests.length; i++) {
        if (JSON.stringify(buggy[i]) === JSON.stringify(f.rows[i])) continue;
        const moved = maxDiff(await run(f, fp32, buggy[i]!), perRequest[i]!);
        const bound = Math.max(...perRequest[i]!.flat().map(fp32Bound));
        if (oneToken(buggy[i]!, f.rows[i]!)) moves.push(`${requests[i]![0]}, one token: ${moved.toExponential(1)}`);
        else {
          expect(moved, `${name}: ${requests[i]![0]}`).toBeGreaterThan(50 * bound);
          moves.push(moved.toFixed(2));
        }
      }
      expect(moves.length, name).toBeGreaterThan(0);
      lines.push(`${name} [${moves.join(', ')}]`);
    }
    console.log(`${flavor} layout bugs, max |Δ| of each request changed:\n  ${lines.join('\n  ')}`);
  });

  it('both sides count: one token of the premise or of the hypothesis changed moves the logits', async () => {
    const rows = f.rows[5]!; // noul plain: premise "Please send my money back.", one row
    const [row] = rows;
    const { premise: p } = sides(f, row!);
    const other = f.tok.encode('zebra').at(-1)!;
    const edit = (at: number): NliRow => ({ ...row!, ids: row!.ids.map((id, j) => (j === at ? other : id)) });
    const [base] = await run(f, fp32, rows);
    const premise = maxDiff(await run(f, fp32, [edit(1)]), [base!]);
    const hypothesis = maxDiff(await run(f, fp32, [edit(p.length + 2)]), [base!]);
    console.log(
      `${flavor}: first premise token changed ${premise.toFixed(3)}, first hypothesis token ${hypothesis.toFixed(3)}`,
    );
    for (const moved of [premise, hypothesis])
      expect(moved).toBeGreaterThan(50 * fp32Bound(Math.max(...base!.map(Math.abs))));
  });
});

// The real shape is generated only for measuring (ensureNliReplicaShape, 1.7 GB): here its size
// is checked from the weight list alone.
describe('the NLI replica at deberta-v3-large', () => {
  it('has the parameters its shape makes, about DeBERTa-v3-large’s 435M', () => {
    const { hidden: H, intermediate: I, layers, types, vocab } = NLI_SHAPES['deberta-v3-large'];
    expect([H, I, layers, NLI_SHAPES['deberta-v3-large'].heads, types, vocab]).toEqual([
      1024, 4096, 24, 16, 2, 128_100,
    ]);
    const linear = (out: number, inp: number): number => out * inp + out;
    const embeddings = (vocab + NLI_FLAVORS.deberta.positions + types) * H + 2 * H;
    const layer = 4 * linear(H, H) + linear(I, H) + linear(H, I) + 2 * 2 * H;
    const head = linear(H, H) + linear(NLI_FLAVORS.deberta.labels.length, H);
    const total = embeddings + layers * layer + head;
    expect(total).toBe(435_064_835);
    expect(nliParameters('deberta-v3-large')).toBe(total);
    expect(Math.abs(total / 435e6 - 1)).toBeLessThan(0.01);
  });
});

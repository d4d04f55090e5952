// Checks that the ONNX graph the generator writes from trained weights computes what train.py's
// torch forward computed: for every held-out row (tokenized as the engine plans it), onnxruntime's
// log-probabilities of the candidate label tokens over the full vocabulary at the answer position,
// against train.py's reference (<data>/tiny-tasks-heldout.reference.json, written after training or
// by `train.py --reference`). Prints the max abs difference per dtype and the candidates' argmax
// accuracy per question type; exits 1 when the fp32 difference passes --tolerance.
//
//   npx tsx src/tools/train/check-onnx.ts [--data models/generated/train] [--weights models/trained/tiny-tasks.safetensors]
//       [--dtypes fp32,int8] [--tolerance 1e-4]
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { ensureSynthModel } from '../synth/ensure.js';
import type { SynthDtype } from '../synth/shapes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** Row i of a line's tokenized questions: fact (noul), pick (choice), urgency (score), as tiny-tasks.ts asks them. */
const TYPES = ['noul', 'choice', 'score'] as const;

interface Row {
  ids: number[];
  cands: number[];
  target: number;
}

export interface CheckResult {
  dtype: SynthDtype;
  rows: number;
  /** Max |log p(onnx) − log p(torch)| over every candidate of every row. */
  maxAbsDiff: number;
  /** Rows whose best candidate differs between the two. */
  argmaxChanged: number;
  /** Candidate-argmax accuracy per question type (onnxruntime). */
  accuracy: Record<(typeof TYPES)[number], number>;
}

/** Full-vocabulary log-softmax of the last position's logits, at the given token ids (float64). */
function candidateLogps(logits: Float32Array, vocab: number, cands: number[]): number[] {
  const last = logits.subarray(logits.length - vocab);
  let max = -Infinity;
  for (const x of last) if (x > max) max = x;
  let sum = 0;
  for (const x of last) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return cands.map((c) => last[c]! - lse);
}

const argmax = (xs: number[]): number => xs.reduce((best, x, i) => (x > xs[best]! ? i : best), 0);

export async function checkOnnx(opts: { rows: Row[]; reference: number[][]; modelDir: string; dtype: SynthDtype }): Promise<CheckResult> {
  const config = JSON.parse(readFileSync(join(opts.modelDir, 'config.json'), 'utf8')) as {
    vocab_size: number;
    num_hidden_layers: number;
    num_key_value_heads: number;
    head_dim: number;
  };
  const manifest = JSON.parse(readFileSync(join(opts.modelDir, 'assay.json'), 'utf8')) as { model_file: string };
  const session = await ort.InferenceSession.create(join(opts.modelDir, manifest.model_file), { intraOpNumThreads: 2 });
  const i64 = (a: number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(a, BigInt), [1, a.length]);
  const emptyKv = new ort.Tensor('float32', new Float32Array(0), [1, config.num_key_value_heads, 0, config.head_dim]);
  let maxAbsDiff = 0;
  let argmaxChanged = 0;
  const right = { noul: 0, choice: 0, score: 0 };
  const count = { noul: 0, choice: 0, score: 0 };
  try {
    for (const [i, row] of opts.rows.entries()) {
      const feeds: Record<string, ort.Tensor> = {
        input_ids: i64(row.ids),
        attention_mask: i64(row.ids.map(() => 1)),
        position_ids: i64(row.ids.map((_, p) => p)),
      };
      for (let l = 0; l < config.num_hidden_layers; l++) {
        feeds[`past_key_values.${l}.key`] = emptyKv;
        feeds[`past_key_values.${l}.value`] = emptyKv;
      }
      const out = await session.run(feeds, ['logits']);
      const logps = candidateLogps(out.logits!.data as Float32Array, config.vocab_size, row.cands);
      const ref = opts.reference[i]!;
      if (ref.length !== logps.length) throw new Error(`reference row ${i} has ${ref.length} candidates, the data ${logps.length}`);
      logps.forEach((l, c) => (maxAbsDiff = Math.max(maxAbsDiff, Math.abs(l - ref[c]!))));
      if (argmax(logps) !== argmax(ref)) argmaxChanged++;
      const type = TYPES[i % 3]!;
      count[type]++;
      if (argmax(logps) === row.target) right[type]++;
    }
  } finally {
    await session.release();
  }
  const accuracy = { noul: right.noul / count.noul, choice: right.choice / count.choice, score: right.score / count.score };
  return { dtype: opts.dtype, rows: opts.rows.length, maxAbsDiff, argmaxChanged, accuracy };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      data: { type: 'string', default: join(ROOT, 'models', 'generated', 'train') },
      weights: { type: 'string', default: join(ROOT, 'models', 'trained', 'tiny-tasks.safetensors') },
      dtypes: { type: 'string', default: 'fp32,int8' },
      tolerance: { type: 'string', default: '1e-4' },
    },
  });
  const data = resolve(values.data);
  const weights = resolve(values.weights);
  const rows = readFileSync(join(data, 'tiny-tasks-heldout.tokens.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);
  const reference = (JSON.parse(readFileSync(join(data, 'tiny-tasks-heldout.reference.json'), 'utf8')) as { logps: number[][] }).logps;
  if (reference.length !== rows.length) throw new Error(`the reference has ${reference.length} rows, the held-out data ${rows.length}: run train.py --reference`);
  let failed = false;
  for (const dtype of values.dtypes.split(',') as SynthDtype[]) {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype, weights, out: join(ROOT, 'models', 'generated', `tiny-tasks-${dtype}`) });
    const r = await checkOnnx({ rows, reference, modelDir, dtype });
    const acc = Object.entries(r.accuracy)
      .map(([t, a]) => `${t} ${a.toFixed(3)}`)
      .join(', ');
    process.stdout.write(
      `${dtype}: ${r.rows} held-out rows, max |log p(onnxruntime) - log p(torch)| = ${r.maxAbsDiff.toExponential(2)}, argmax changed on ${r.argmaxChanged}; candidate accuracy ${acc} (${modelDir})\n`,
    );
    if (dtype === 'fp32' && !(r.maxAbsDiff <= Number(values.tolerance))) failed = true;
  }
  if (failed) {
    process.stderr.write(`fp32 differs from the torch forward by more than ${values.tolerance}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

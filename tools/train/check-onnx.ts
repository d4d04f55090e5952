// Checks that the ONNX graph the generator writes from trained weights computes what train.py's
// torch forward computed: for every held-out row (tokenized as the engine plans it), onnxruntime's
// log-probabilities of the candidate label tokens over the full vocabulary at the answer position,
// against train.py's reference (<data>/<name>-heldout.reference.json, written after training or
// by `train.py --reference`). Prints the max abs difference per dtype and the accuracy per question
// type (a score question of the decider contract: the level whose yes/no row says yes most); exits
// 1 when the fp32 difference passes --tolerance.
//
//   npx tsx tools/train/check-onnx.ts [--name tiny-tasks|tiny-decider] [--data models/generated/train]
//       [--weights models/trained/<name>.safetensors] [--dtypes fp32,int8] [--tolerance 1e-4]
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureSynthModel, logSoftmaxAt, ModelRunner, openModelFolder, type SynthDtype } from '../../src/internal.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Row i of a line's tokenized questions: fact (noul), pick (choice), urgency (score), as tiny-tasks.ts asks them. */
const TYPES = ['noul', 'choice', 'score'] as const;

/** One row of write-data.ts: a question, or (decider score) one level's yes/no row of question `q`. */
export interface Row {
  ids: number[];
  cands: number[];
  target: number;
  /** The question's type; absent: tiny-tasks' order (TYPES, one row per question). */
  type?: (typeof TYPES)[number];
  /** A score level's row: its question, the level it proposes, the right level, the yes candidate's index. */
  q?: number;
  level?: number;
  answer?: number;
  yes?: number;
}

export interface CheckResult {
  dtype: SynthDtype;
  rows: number;
  /** Max |log p(onnx) − log p(torch)| over every candidate of every row. */
  maxAbsDiff: number;
  /** Rows whose best candidate differs between the two. */
  argmaxChanged: number;
  /** Accuracy per question type (onnxruntime), as questionAccuracy reads the rows. */
  accuracy: Record<string, number>;
}

const argmax = (xs: number[]): number => xs.reduce((best, x, i) => (x > xs[best]! ? i : best), 0);

/**
 * Accuracy per question type from each row's candidate scores (log-probabilities or logits): a row
 * is a question, but the score rows of one `q` are one question, answered by the level whose
 * l_yes − l_no is largest (train.py's question_accuracy).
 */
export function questionAccuracy(rows: readonly Row[], scores: readonly number[][]): Record<string, number> {
  const right: Record<string, number> = {};
  const count: Record<string, number> = {};
  const levels = new Map<number, { margin: number; level: number; answer: number }>();
  rows.forEach((row, i) => {
    const s = scores[i]!;
    if (row.level !== undefined) {
      const margin = s[row.yes!]! - s[1 - row.yes!]!;
      const best = levels.get(row.q!);
      if (!best || margin > best.margin) levels.set(row.q!, { margin, level: row.level, answer: row.answer! });
      return;
    }
    const type = row.type ?? TYPES[i % 3]!;
    count[type] = (count[type] ?? 0) + 1;
    right[type] = (right[type] ?? 0) + Number(argmax(s) === row.target);
  });
  for (const best of levels.values()) {
    count.score = (count.score ?? 0) + 1;
    right.score = (right.score ?? 0) + Number(best.level === best.answer);
  }
  return Object.fromEntries(Object.keys(count).map((t) => [t, right[t]! / count[t]!]));
}

export async function checkOnnx(opts: {
  rows: Row[];
  reference: number[][];
  modelDir: string;
  dtype: SynthDtype;
}): Promise<CheckResult> {
  // The export as written (no load-time rewrite): its raw logits over the full vocabulary.
  const runner = await ModelRunner.create(await openModelFolder(opts.modelDir), {
    modelDir: opts.modelDir,
    threads: 2,
    rewriteGraph: false,
  });
  let maxAbsDiff = 0;
  let argmaxChanged = 0;
  const all: number[][] = [];
  try {
    for (const [i, row] of opts.rows.entries()) {
      const logp = logSoftmaxAt((await runner.logits(row.ids)).at(-1)!, 1);
      const logps = row.cands.map(logp);
      const ref = opts.reference[i]!;
      if (ref.length !== logps.length)
        throw new Error(`reference row ${i} has ${ref.length} candidates, the data ${logps.length}`);
      logps.forEach((l, c) => (maxAbsDiff = Math.max(maxAbsDiff, Math.abs(l - ref[c]!))));
      if (argmax(logps) !== argmax(ref)) argmaxChanged++;
      all.push(logps);
    }
  } finally {
    await runner.close();
  }
  const accuracy = questionAccuracy(opts.rows, all);
  return { dtype: opts.dtype, rows: opts.rows.length, maxAbsDiff, argmaxChanged, accuracy };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      name: { type: 'string', default: 'tiny-tasks' },
      data: { type: 'string', default: join(ROOT, 'models', 'generated', 'train') },
      weights: { type: 'string' },
      dtypes: { type: 'string', default: 'fp32,int8' },
      tolerance: { type: 'string', default: '1e-4' },
    },
  });
  const data = resolve(values.data);
  const name = values.name;
  const weights = resolve(values.weights ?? join(ROOT, 'models', 'trained', `${name}.safetensors`));
  const rows = readFileSync(join(data, `${name}-heldout.tokens.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);
  const reference = (
    JSON.parse(readFileSync(join(data, `${name}-heldout.reference.json`), 'utf8')) as { logps: number[][] }
  ).logps;
  if (reference.length !== rows.length)
    throw new Error(
      `the reference has ${reference.length} rows, the held-out data ${rows.length}: run train.py --name ${name} --reference`,
    );
  let failed = false;
  for (const dtype of values.dtypes.split(',') as SynthDtype[]) {
    const modelDir = await ensureSynthModel({
      shape: 'tiny',
      dtype,
      weights,
      out: join(ROOT, 'models', 'generated', `${name}-${dtype}`),
    });
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

// Checks that the ONNX graph the generator writes from trained weights computes what train.py's
// torch forward computed: for every held-out row (tokenized as the engine plans it), onnxruntime's
// log-probabilities of the candidate label tokens over the full vocabulary at the answer position,
// against train.py's reference (<data>/tiny-tasks-heldout.reference.json, written after training or
// by `train.py --reference`). Prints the max abs difference per dtype and the candidates' argmax
// accuracy per question type; exits 1 when the fp32 difference passes --tolerance.
//
//   npx tsx tools/train/check-onnx.ts [--data models/generated/train] [--weights models/trained/tiny-tasks.safetensors]
//       [--dtypes fp32,int8] [--tolerance 1e-4]
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureSynthModel, logSoftmaxAt, ModelRunner, openModelFolder, type SynthDtype } from '../../src/internal.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
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

const argmax = (xs: number[]): number => xs.reduce((best, x, i) => (x > xs[best]! ? i : best), 0);

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
  const right = { noul: 0, choice: 0, score: 0 };
  const count = { noul: 0, choice: 0, score: 0 };
  try {
    for (const [i, row] of opts.rows.entries()) {
      const logp = logSoftmaxAt((await runner.logits(row.ids)).at(-1)!, 1);
      const logps = row.cands.map(logp);
      const ref = opts.reference[i]!;
      if (ref.length !== logps.length)
        throw new Error(`reference row ${i} has ${ref.length} candidates, the data ${logps.length}`);
      logps.forEach((l, c) => (maxAbsDiff = Math.max(maxAbsDiff, Math.abs(l - ref[c]!))));
      if (argmax(logps) !== argmax(ref)) argmaxChanged++;
      const type = TYPES[i % 3]!;
      count[type]++;
      if (argmax(logps) === row.target) right[type]++;
    }
  } finally {
    await runner.close();
  }
  const accuracy = {
    noul: right.noul / count.noul,
    choice: right.choice / count.choice,
    score: right.score / count.score,
  };
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
  const reference = (
    JSON.parse(readFileSync(join(data, 'tiny-tasks-heldout.reference.json'), 'utf8')) as { logps: number[][] }
  ).logps;
  if (reference.length !== rows.length)
    throw new Error(
      `the reference has ${reference.length} rows, the held-out data ${rows.length}: run train.py --reference`,
    );
  let failed = false;
  for (const dtype of values.dtypes.split(',') as SynthDtype[]) {
    const modelDir = await ensureSynthModel({
      shape: 'tiny',
      dtype,
      weights,
      out: join(ROOT, 'models', 'generated', `tiny-tasks-${dtype}`),
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

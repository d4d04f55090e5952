// Writes the tiny-tasks data: the held-out dataset (eval format, committed) and the training set
// tokenized exactly as the engine plans a request, one JSON line per row: {"ids": prompt tokens,
// "cands": each label's token, "target": the labeled one's index}. train.py reads the latter.
// --contract picks the prompt the rows are written in:
//   generic  Assay's own prompt (same template, prompt version v1, prefix and suffix): one row per
//            question, files tiny-tasks-*
//   decider  the decider contract (decider-rows.ts, through the engine's decider layout): files
//            tiny-decider-*, with a calibration split and the model folder's decision.json
//
//   npx tsx tools/train/write-data.ts [--contract generic|decider] [--train 6000] [--heldout 90] [--out models/generated/train]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureSynthModel, planRequest, promptSet, TextCodec } from '../../src/internal.js';
import { generateLines, type TaskLine } from './tiny-tasks.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const TRAIN_SEED = 1;
export const HELDOUT_SEED = 2;
/** Seed 3 is the README's 1,000 further lines; the decider's calibration split is seed 4. */
export const CALIBRATION_SEED = 4;
export const HELDOUT_FILE = join(ROOT, 'examples', 'tiny-tasks-heldout.jsonl');

/** The training rows of some lines: one per question, with the single-token labels as candidates. */
export function tokenize(
  lines: TaskLine[],
  codec: TextCodec,
): Array<{ ids: number[]; cands: number[]; target: number }> {
  const end = codec.eosTokenId!;
  const budgets = { request: 64_000, question: 32_000, context: 32_768 };
  return lines.flatMap((line) => {
    const plan = planRequest({ state: line.state, questions: line.questions }, codec, promptSet('v1'), end, budgets);
    return plan.questions.map((q) => {
      if (q.labels.some((l) => l.tokens.length !== 1)) throw new Error(`a label of ${q.key} is not one token`);
      const e = line.expected[q.key];
      const outcomes =
        q.question.type === 'noul'
          ? [true, false]
          : q.question.type === 'choice'
            ? Object.keys(q.question.criteria)
            : q.question.criteria.map((_, i) => i);
      return {
        ids: [...plan.prefix, ...q.suffix],
        cands: q.labels.map((l) => l.tokens[0]!),
        target: outcomes.indexOf(e as never),
      };
    });
  });
}

/** The rows of one contract and what the trained model's folder carries besides the graph. */
interface Contract {
  name: string;
  rows(lines: TaskLine[], codec: TextCodec): unknown[];
  /** Lines of a calibration split (seed CALIBRATION_SEED) for the temperatures; 0: none. */
  calibration: number;
  /** train.py's <name>.folder.json: the task line and the folder's files (decision.json, ...). */
  folder?: Record<string, unknown>;
}

async function contractOf(name: string): Promise<Contract> {
  if (name === 'generic') return { name: 'tiny-tasks', rows: tokenize, calibration: 0 };
  if (name === 'decider') {
    const { deciderRows, DECIDER_FOLDER } = await import('./decider-rows.js');
    return {
      name: 'tiny-decider',
      rows: deciderRows,
      calibration: 300,
      folder: { ...DECIDER_FOLDER, calibration_seed: CALIBRATION_SEED },
    };
  }
  throw new Error(`--contract must be generic or decider, not ${name}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      contract: { type: 'string', default: 'generic' },
      train: { type: 'string', default: '6000' },
      heldout: { type: 'string', default: '90' },
      out: { type: 'string', default: join(ROOT, 'models', 'generated', 'train') },
    },
  });
  const contract = await contractOf(values.contract);
  const codec = await TextCodec.load(await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }));
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const train = generateLines(Number(values.train), TRAIN_SEED);
  const heldout = generateLines(Number(values.heldout), HELDOUT_SEED);
  const jsonl = (xs: unknown[]) => `${xs.map((x) => JSON.stringify(x)).join('\n')}\n`;
  const file = (part: string) => join(out, `${contract.name}-${part}`);
  writeFileSync(HELDOUT_FILE, jsonl(heldout));
  writeFileSync(file('train.jsonl'), jsonl(train));
  const rows = contract.rows(train, codec) as Array<{ ids: number[] }>;
  writeFileSync(file('train.tokens.jsonl'), jsonl(rows));
  writeFileSync(file('heldout.tokens.jsonl'), jsonl(contract.rows(heldout, codec)));
  if (contract.calibration > 0) {
    const calibration = generateLines(contract.calibration, CALIBRATION_SEED);
    writeFileSync(file('calibration.tokens.jsonl'), jsonl(contract.rows(calibration, codec)));
  }
  if (contract.folder) writeFileSync(join(out, `${contract.name}.folder.json`), `${JSON.stringify(contract.folder)}\n`);
  process.stdout.write(
    `wrote ${HELDOUT_FILE} (${heldout.length} lines) and ${file('*')} (${train.length} lines, ${rows.length} rows, longest ${Math.max(...rows.map((r) => r.ids.length))} tokens)\n`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

// Writes the tiny-tasks data: the held-out dataset (eval format, committed) and the training set
// tokenized exactly as the engine plans a request (same template, prompt version v1, prefix and
// suffix), one JSON line per question: {"ids": prompt tokens, "cands": each label's token, "target":
// the labeled one's index}. train.py reads the latter.
//
//   npx tsx tools/train/write-data.ts [--train 6000] [--heldout 90] [--out models/generated/train]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureSynthModel, planRequest, promptSet, TextCodec } from '../../src/internal.js';
import { generateLines, type TaskLine } from './tiny-tasks.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const TRAIN_SEED = 1;
export const HELDOUT_SEED = 2;
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      train: { type: 'string', default: '6000' },
      heldout: { type: 'string', default: '90' },
      out: { type: 'string', default: join(ROOT, 'models', 'generated', 'train') },
    },
  });
  const codec = await TextCodec.load(await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }));
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const train = generateLines(Number(values.train), TRAIN_SEED);
  const heldout = generateLines(Number(values.heldout), HELDOUT_SEED);
  const jsonl = (xs: unknown[]) => `${xs.map((x) => JSON.stringify(x)).join('\n')}\n`;
  writeFileSync(HELDOUT_FILE, jsonl(heldout));
  writeFileSync(join(out, 'tiny-tasks-train.jsonl'), jsonl(train));
  const rows = tokenize(train, codec);
  writeFileSync(join(out, 'tiny-tasks-train.tokens.jsonl'), jsonl(rows));
  const check = tokenize(heldout, codec);
  writeFileSync(join(out, 'tiny-tasks-heldout.tokens.jsonl'), jsonl(check));
  process.stdout.write(
    `wrote ${HELDOUT_FILE} (${heldout.length} lines) and ${out}/tiny-tasks-train*.jsonl (${train.length} lines, ${rows.length} questions, longest ${Math.max(...rows.map((r) => r.ids.length))} tokens)\n`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

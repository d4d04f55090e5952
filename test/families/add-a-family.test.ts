// CONTRIBUTING's recipe for a model family, walked: a throwaway family (`echo-rows`) is added to a
// copy of src/ exactly as the recipe says, one folder (its descriptor and its parts) and one line
// in the list, and nothing else. The copy then knows it everywhere the list reaches: its name is a
// family name (the registry's `family`), a folder whose decision.json declares its layout id is
// detected as it, loads through its descriptor's parts and answers through the engine's evaluator,
// and the check that no family is named outside its folder and the list passes on the copy.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const WORK = join(ROOT, '.test-output');
let copy: string;
let models: string;

/** The throwaway family's folder, as the recipe says: a descriptor and its parts. */
const DESCRIPTOR = `// A throwaway family for the recipe's test: one row per question, its logits made up.
import { defineFamily, rowParts } from '../descriptor.js';
import { DECISION_FILE } from '../files.js';

export const echoRows = defineFamily({
  name: 'echo-rows',
  engine: 'encoder-rows',
  reuses: 'nothing',
  fetch: { settings: DECISION_FILE, optional: [], split: false, oneGraph: 'an echo model is one graph' },
  rows: rowParts(async () => (await import('./family.js')).echoParts),
  refusals: [],
});
`;
const FAMILY = `// The throwaway family's parts: rows of one token per question; a "graph" that scores each
// option by its index (no ONNX).
import { wholeRowsUsage, runBatched } from '../rows/batched.js';
import type { FamilyPlan, RowFamilySpec, RowOutput, RowReader } from '../rows/family.js';
import { askedInOrder } from '../shared/question.js';

interface EchoRow { tokens: number; options: number }

const outputs = (rows: readonly EchoRow[]): RowOutput[] =>
  rows.map((r) => ({ logits: Array.from({ length: r.options }, (_, i) => i) }));

export const echoParts: RowFamilySpec<FamilyPlan<EchoRow>, RowReader<FamilyPlan<EchoRow>>, EchoRow> = {
  read: () => ({
    notes: ['echoes'],
    plan(request) {
      const rows: EchoRow[] = [];
      const questions = askedInOrder(request).map(({ key, question, options }) => {
        rows.push({ tokens: 1, options: question.type === 'score' ? question.criteria.length : (options?.length ?? 2) });
        return { key, question, rows: [rows.length - 1], ...(options ? { options } : {}) };
      });
      return { questions, rows };
    },
    probabilities(_q, out) {
      const l = out[0]!.logits;
      const total = l.reduce((a, b) => a + b + 1, 0);
      return l.map((x) => (x + 1) / total);
    },
  }),
  open: async () => ({
    graph: 'echo',
    notes: [],
    rowsAlone: false,
    usage: wholeRowsUsage,
    run: (plan, pass) => runBatched(plan.rows, (r) => r.tokens, 0, pass, async (b) => outputs(b)),
    pass: async (rows) => outputs(rows),
    feeds: () => ({}),
    close: async () => {},
  }),
};
`;

beforeAll(() => {
  mkdirSync(WORK, { recursive: true });
  copy = mkdtempSync(join(WORK, 'family-walk-'));
  cpSync(join(ROOT, 'src'), join(copy, 'src'), { recursive: true });
  // 1. One folder: the family's descriptor and its parts.
  const folder = join(copy, 'src', 'engine', 'families', 'echo');
  mkdirSync(folder);
  writeFileSync(join(folder, 'descriptor.ts'), DESCRIPTOR);
  writeFileSync(join(folder, 'family.ts'), FAMILY);
  // 2. One line in the list (and its import).
  const listFile = join(copy, 'src', 'engine', 'families', 'list.ts');
  const list = readFileSync(listFile, 'utf8');
  const listed = list
    .replace(
      "import type { FamilyDescriptor } from './descriptor.js';",
      "import type { FamilyDescriptor } from './descriptor.js';\nimport { echoRows } from './echo/descriptor.js';",
    )
    .replace(
      '] as const satisfies readonly FamilyDescriptor[];',
      '  echoRows,\n] as const satisfies readonly FamilyDescriptor[];',
    );
  expect(listed).not.toBe(list);
  writeFileSync(listFile, listed);
  // A model folder of the family: its decision.json declares its layout id.
  models = join(copy, 'echo-model');
  mkdirSync(models);
  writeFileSync(join(models, 'decision.json'), JSON.stringify({ layout: 'echo-rows-v1' }));
}, 120_000);
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe("CONTRIBUTING's recipe for a model family, on a throwaway family", () => {
  it('its name is a family name: the list, the registry schema', async () => {
    const engine = await import(join(copy, 'src', 'engine', 'index.ts'));
    expect(engine.FAMILY_NAMES).toContain('echo-rows');
    const { RegistryFileSchema } = await import(join(copy, 'src', 'registry', 'schema.ts'));
    const entry = { path: 'm', description: 'd', release_date: '2026-01-01', family: 'echo-rows' };
    expect(RegistryFileSchema.safeParse({ default: 'm-1', models: { 'm-1': entry } }).success).toBe(true);
  });

  it('a folder declaring its layout id is detected as it, loads by its descriptor and answers', async () => {
    const engine = await import(join(copy, 'src', 'engine', 'index.ts'));
    expect(engine.detectFamily(models)).toBe('echo-rows');
    const evaluator = await engine.loadEvaluator({ modelDir: models, engineThread: false, plannerThreads: 0 });
    try {
      const result = await evaluator.evaluate({
        state: 's',
        questions: { q: { type: 'choice', criteria: { a: null, b: null, c: null } } },
      });
      expect(result.answers.q.type).toBe('choice');
      // Its readout through the engine's answer builder (log, then softmax: float64 rounding only).
      const p = Object.values(result.answers.q.probabilities) as number[];
      [1 / 6, 2 / 6, 3 / 6].forEach((want, i) => expect(p[i]).toBeCloseTo(want, 12));
      expect(result.usage.input_tokens).toBe(1);
      expect(evaluator.stats().family).toBe('echo-rows');
    } finally {
      await evaluator.close();
    }
  });

  it('no other file of the copy names it: the folder and the line were the whole change', async () => {
    const names = (await import(join(copy, 'src', 'engine', 'families', 'list.ts'))).FAMILY_NAMES as string[];
    expect(names.at(-1)).toBe('echo-rows');
    const { execFileSync } = await import('node:child_process');
    const hits = execFileSync('grep', ['-rl', 'echo-rows', join(copy, 'src')], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((f) => f.slice(join(copy, 'src').length + 1))
      .sort();
    expect(hits).toEqual(['engine/families/echo/descriptor.ts']);
  });
});

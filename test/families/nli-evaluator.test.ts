// An NLI cross-encoder folder served by the engine (families/nli/family.ts behind
// families/evaluator.ts), against the independent references on every golden request
// (test/families/nli/goldens.json, made by tools/families/nli/nli_pairs.py from the pipeline's rules):
// - for each golden model, a folder with that model's config.json / nli_config.json and the test
//   tokenizer it was made with: the rows the engine builds equal the reference's (ids and token
//   type ids), the refusals are the same (a BudgetError: 422);
// - the answers built from the goldens' logits (the engine's readout and its one answer builder)
//   equal the reference readout within 1e-5 (float64 on both sides);
// - where the replica's graph has the model's label columns (deberta 3-way, modernbert 2-way), the
//   whole evaluator answers as the reference readout of its raw scores, and those raw scores equal
//   the numpy forward pass (tools/families/nli/nli_forward.py) on the reference's rows within the
//   replica test's fp32 bound, 4e-4·(1 + |logit|);
// - a dynamic int8 export runs rows one by one: its answers do not depend on the other rows.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import type { FamilyPlan, FamilyQuestion } from '../../src/engine/families/rows/family.js';
import type { NliRowInput } from '../../src/engine/families/nli/family.js';
import { openFamily, type OpenedFamily } from './row-family.js';
import { answerQuestions } from '../../src/engine/execution/answers.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { ensureNliReplica, type NliFlavor } from '../../tools/families/nli/replica.js';
import { NLI_TEST_TOKENIZERS } from '../../tools/families/nli/tokenizers.js';
import * as golden from './golden-helpers.js';
import { hasNumpy as numpyFor } from './replica-helpers.js';

const hasNumpy = numpyFor('the numpy forward pass of the NLI replicas');

interface GoldenModel {
  tokenizer: NliFlavor;
  nli_config: Record<string, unknown> | null;
  config: Record<string, unknown>;
}
interface GoldenRequest extends golden.GoldenRequest {
  model: string;
  logits?: number[][];
}
interface GoldenResult {
  name: string;
  rows?: Array<{ ids: number[]; tokenTypeIds?: number[] }>;
  refused?: Record<string, number>;
  readout?: golden.ReadoutNumbers;
}
const goldens = golden.readGoldens<
  golden.Goldens<GoldenRequest, GoldenResult> & { models: Record<string, GoldenModel> }
>(join(import.meta.dirname, 'nli', 'goldens.json'));

/** The replica flavor whose graph has this model's label columns, if any. */
function runnable(model: string): NliFlavor | undefined {
  const m = goldens.models[model]!;
  const columns = Object.keys(m.config.label2id as object).length;
  return m.tokenizer === 'deberta' && columns === 3
    ? 'deberta'
    : m.tokenizer === 'modernbert' && columns === 2
      ? 'modernbert'
      : undefined;
}

const work = mkdtempSync(join(tmpdir(), 'assay-nli-eval-'));
/** A folder for a golden model: its tokenizer's replica graph, its config files, the test tokenizer it was made with. */
function folderFor(model: string, variant?: 'int8'): string {
  const m = goldens.models[model]!;
  const dir = join(work, `${model}${variant ? `-${variant}` : ''}`);
  if (existsSync(dir)) return dir;
  const replica = ensureNliReplica(m.tokenizer);
  mkdirSync(dir, { recursive: true });
  if (m.tokenizer === 'deberta') {
    mkdirSync(join(dir, 'onnx'));
    const files = variant === 'int8' ? ['model_quantized.onnx'] : ['model.onnx', 'model.onnx_data'];
    for (const f of files) symlinkSync(join(replica, 'onnx', f), join(dir, 'onnx', f));
  } else symlinkSync(join(replica, 'model.onnx'), join(dir, 'model.onnx'));
  const replicaConfig = JSON.parse(readFileSync(join(replica, 'config.json'), 'utf8')) as Record<string, unknown>;
  const { id2label: _i, label2id: _l, max_position_embeddings: _m, ...rest } = replicaConfig;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...rest, ...m.config }));
  if (m.nli_config) writeFileSync(join(dir, 'nli_config.json'), JSON.stringify(m.nli_config));
  const tok = NLI_TEST_TOKENIZERS[m.tokenizer]();
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok.tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tok.config));
  cpSync(join(replica, 'assay.json'), join(dir, 'assay.json'));
  return dir;
}

type NliFamily = OpenedFamily<FamilyPlan<NliRowInput>, NliRowInput>;
const families = new Map<string, NliFamily>();
const evaluators = new Map<string, Evaluator>();
beforeAll(async () => {
  for (const model of Object.keys(goldens.models)) {
    families.set(model, await openFamily('nli-pairs', folderFor(model)));
    if (runnable(model))
      evaluators.set(model, await loadEvaluator({ modelDir: folderFor(model), threads: 1, engineThread: false }));
  }
}, 300_000);
golden.closeAfterAll(work, families, evaluators);

describe('an NLI folder through the engine, on every golden request', () => {
  it('is detected as nli-pairs from its files (config.json: a sequence classifier)', () => {
    expect(detectFamily(ensureNliReplica('deberta'))).toBe('nli-pairs');
    expect(detectFamily(ensureNliReplica('modernbert'))).toBe('nli-pairs');
  });

  it("builds the reference rows, refuses what it refuses, and reads the goldens' logits as the reference does", () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    let worst = 0;
    let refused = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      const family = families.get(g.model)!;
      if (ref.refused) {
        expect(() => family.plan(request), g.name).toThrow(BudgetError);
        refused++;
        continue;
      }
      const plan = family.plan(request);
      expect(
        plan.rows.map(({ row }) => ({ ids: row.ids, ...(row.tokenTypeIds ? { tokenTypeIds: row.tokenTypeIds } : {}) })),
        g.name,
      ).toEqual(ref.rows!.map((r) => ({ ids: r.ids, ...(r.tokenTypeIds ? { tokenTypeIds: r.tokenTypeIds } : {}) })));
      expect(family.usage(plan).usage.input_tokens).toBe(ref.rows!.reduce((n, r) => n + r.ids.length, 0));
      const q = plan.questions[0]!;
      const outputs = g.logits!.map((logits) => ({ logits }));
      const [answer] = Object.values(
        answerQuestions([q], [family.probabilities(q as FamilyQuestion, outputs).map(Math.log)]),
      );
      const got = golden.answerNumbers(answer!, g);
      const want = golden.readoutNumbers(ref.readout!, g.question.type);
      expect(got.length, g.name).toBe(want.length);
      got.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want[j]!))));
    }
    expect(refused).toBe(goldens.results.filter((r) => r.refused).length);
    console.info(`NLI: golden logits read, worst |Δ| to the reference readout ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  });

  it('runs the graph: answers are the reference readout of its raw scores; raw scores are the numpy pass', async () => {
    let checked = 0;
    let worstAnswer = 0;
    let worstScore = 0;
    for (const [model, evaluator] of evaluators) {
      const family = families.get(model)!;
      const cases = goldens.requests
        .map((g, i) => [g, goldens.results[i]!] as const)
        .filter(([g, r]) => g.model === model && !r.refused);
      expect(cases.length).toBeGreaterThan(10);
      const rowsOf = cases.map(([, r]) => r.rows!);
      const flat = rowsOf.flat();
      const raw = await family.run(
        flat.map((r) => ({ tokens: r.ids.length, row: { ...r, attentionMask: r.ids.map(() => 1) } })),
      );
      let at = 0;
      const rawOf = rowsOf.map((rows) => raw.slice(at, (at += rows.length)).map((o) => o.logits));
      const readouts = golden.referenceReadouts(
        'nli_pairs',
        { [model]: goldens.models[model]!.config },
        cases.map(([g], i) => ({ type: g.question.type, logits: rawOf[i], config: model })),
      );
      for (const [i, [g]] of cases.entries()) {
        const { answers } = await evaluator.evaluate(golden.engineRequest(g));
        const got = golden.answerNumbers(answers.q!, g);
        const want = golden.readoutNumbers(readouts[i]!, g.question.type);
        got.forEach((x, j) => (worstAnswer = Math.max(worstAnswer, Math.abs(x - want[j]!))));
        checked++;
      }
      if (hasNumpy) {
        const dir = ensureNliReplica(goldens.models[model]!.tokenizer);
        // Rows sorted by length, in groups each padded to its longest (mask 0: no weight in the
        // reference's attention); one padded batch of every row would be b × s² scores in float64.
        const order = flat.map((_, i) => i).sort((a, b) => flat[a]!.ids.length - flat[b]!.ids.length);
        const want: number[][] = [];
        for (let at = 0; at < order.length; at += 32) {
          const group = order.slice(at, at + 32).map((i) => flat[i]!);
          const n = Math.max(...group.map((r) => r.ids.length));
          const pad = (xs: number[]) => [...xs, ...Array<number>(n - xs.length).fill(0)];
          const batch: Record<string, number[][]> = {
            input_ids: group.map((r) => pad(r.ids)),
            attention_mask: group.map((r) => pad(r.ids.map(() => 1))),
          };
          if (goldens.models[model]!.tokenizer === 'deberta')
            batch.token_type_ids = group.map((r) => pad(r.tokenTypeIds ?? r.ids.map(() => 0)));
          const got = JSON.parse(golden.python([golden.reference('nli_forward.py'), dir], JSON.stringify(batch))) as {
            logits: number[][];
          };
          order.slice(at, at + 32).forEach((i, j) => (want[i] = got.logits[j]!));
        }
        want.forEach((row, i) =>
          row.forEach(
            (x, j) => (worstScore = Math.max(worstScore, Math.abs(x - raw[i]!.logits[j]!) / (1 + Math.abs(x)))),
          ),
        );
      }
    }
    console.info(
      `NLI: ${checked} answers, worst |Δ| ${worstAnswer.toExponential(2)}; raw scores vs numpy, worst |Δ|/(1+|x|) ${worstScore.toExponential(2)}`,
    );
    expect(checked).toBeGreaterThan(20);
    expect(worstAnswer).toBeLessThan(1e-5);
    if (hasNumpy) expect(worstScore).toBeLessThan(4e-4);
  }, 300_000);
});

describe('a dynamic int8 export (model_quantized.onnx, one activation scale per run)', () => {
  it('is the default variant, runs rows one by one, and so answers a question alike whatever else the request asks', async () => {
    const warnings: string[] = [];
    const e = await loadEvaluator({
      modelDir: ensureNliReplica('deberta'),
      threads: 1,
      engineThread: false,
      onNote: (m) => warnings.push(m.message),
    });
    try {
      expect(e.graph).toMatch(/model_quantized\.onnx$/);
      expect(warnings.join('\n')).toMatch(/rows run one by one/);
      const topic = {
        type: 'choice',
        instructions: 'What is it about?',
        criteria: { delivery: null, billing: 'invoices', product: null },
      } as const;
      const state = 'The order arrived two days late and the box was damaged.';
      const alone = await e.evaluate({ state, questions: { topic } });
      const before = e.stats().passes;
      const crowded = await e.evaluate({
        state,
        questions: {
          topic,
          refund: { type: 'noul', instructions: 'The customer asks for a refund.' },
          level: { type: 'score', instructions: 'How severe?', criteria: ['none', 'some', 'serious', 'very serious'] },
        },
      });
      expect(e.stats().passes - before).toBe(3 + 1 + 4); // a pass per row
      expect(crowded.answers.topic).toEqual(alone.answers.topic);
    } finally {
      await e.close();
    }
  });
});

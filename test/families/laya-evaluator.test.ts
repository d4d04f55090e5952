// A Laya folder served by the engine (families/laya/family.ts behind families/evaluator.ts), against
// the independent references on every golden request (test/families/laya/goldens.json, made by
// tools/families/laya/laya_layout.py from the authors' rules):
// - the rows the engine runs equal the reference's token rows, marker positions and qtype;
// - the raw scores of the replica's graph (tools/families/laya/replica.ts) equal the numpy forward
//   pass (tools/families/laya/laya_forward.py) on the reference's rows within 1e-4 (the fp32 bound of
//   test/families/laya-replica.test.ts: ~√n·u growth over ≤ 1,024 keys on O(1) activations);
// - the answers equal the reference readout (laya_layout.py `readout`, with each golden config's
//   calibration and clamp) of those raw scores within 1e-5 (float64 on both sides: the only
//   difference is the log → exp of the engine's shared answer builder, ~1e-15);
// - the requests the reference refuses are refused (422's BudgetError, with the family's message),
//   also across the engine thread;
// - the split encoder + head export gives the single graph's answers; batching rows changes nothing.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveEngineConfig } from '../../src/engine/config.js';
import { BudgetError } from '../../src/engine/errors.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import type { LayaRowInput } from '../../src/engine/families/laya/family.js';
import type { FamilyPlan } from '../../src/engine/families/rows/family.js';
import { openFamily, type OpenedFamily } from './row-family.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import type { Answer, EvaluateRequest } from '../../src/engine/types.js';
import { ensureLayaReplica } from '../../tools/families/laya/replica.js';
import * as golden from './golden-helpers.js';
import { hasNumpy as numpyFor } from './replica-helpers.js';

const hasNumpy = numpyFor('the numpy forward pass of the Laya replica');

interface GoldenRequest extends golden.GoldenRequest {
  config: string;
}
interface GoldenResult {
  name: string;
  ids?: number[];
  markerPositions?: number[];
  qtype?: number;
  refused?: Record<string, number>;
}
const goldens = golden.readGoldens<
  golden.Goldens<GoldenRequest, GoldenResult> & { configs: Record<string, Record<string, unknown>> }
>(join(import.meta.dirname, 'laya', 'goldens.json'));

const replica = ensureLayaReplica();
const work = mkdtempSync(join(tmpdir(), 'assay-laya-eval-'));
/** A folder per golden config: the replica's graphs and tokenizer, the config's rl_agent_config.json. */
function folderFor(config: string, onnx: string[] = ['model.onnx', 'model.onnx_data']): string {
  const dir = join(work, `${config}-${onnx.join('+')}`);
  if (existsSync(dir)) return dir;
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  for (const f of onnx) symlinkSync(join(replica, 'onnx', f), join(dir, 'onnx', f));
  cpSync(join(replica, 'tokenizer'), join(dir, 'tokenizer'), { recursive: true });
  cpSync(join(replica, 'assay.json'), join(dir, 'assay.json'));
  writeFileSync(join(dir, 'rl_agent_config.json'), JSON.stringify(goldens.configs[config]));
  return dir;
}

type LayaFamily = OpenedFamily<FamilyPlan<LayaRowInput>, LayaRowInput>;
const families = new Map<string, LayaFamily>();
const evaluators = new Map<string, Evaluator>();
beforeAll(async () => {
  for (const config of Object.keys(goldens.configs)) {
    const c = resolveEngineConfig({ modelDir: folderFor(config), threads: 1 });
    families.set(config, await openFamily('laya-markers', c.modelDir));
    evaluators.set(config, await loadEvaluator({ modelDir: folderFor(config), threads: 1, engineThread: false }));
  }
}, 120_000);
golden.closeAfterAll(work, families, evaluators);

describe('a Laya folder through the engine, on every golden request', () => {
  it('is detected as laya-markers from its files', () => {
    expect(detectFamily(replica)).toBe('laya-markers');
    expect(detectFamily(folderFor('defaults'))).toBe('laya-markers');
  });

  it('runs the reference rows, gives its raw scores and its answers, refuses what it refuses', async () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    const ran: Array<{ g: GoldenRequest; ref: GoldenResult; logits: number[]; answer: Answer }> = [];
    let refused = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      const family = families.get(g.config)!;
      if (ref.refused) {
        expect(() => family.plan(request), g.name).toThrow(BudgetError);
        await expect(evaluators.get(g.config)!.evaluate(request), g.name).rejects.toThrow(BudgetError);
        refused++;
        continue;
      }
      const plan = family.plan(request);
      expect(plan.rows, g.name).toHaveLength(1);
      const row = plan.rows[0]!;
      expect({ ids: row.ids, markers: row.markers, qtype: row.qtype }, g.name).toEqual({
        ids: ref.ids,
        markers: ref.markerPositions,
        qtype: ref.qtype,
      });
      expect(family.usage(plan).usage.input_tokens).toBe(ref.ids!.length);
      const [out] = await family.run([row]);
      const { answers } = await evaluators.get(g.config)!.evaluate(request);
      ran.push({ g, ref, logits: out!.logits, answer: answers.q! });
    }
    expect(refused).toBe(goldens.results.filter((r) => r.refused).length);
    expect(ran.length).toBeGreaterThanOrEqual(100);

    // The answers: the reference readout of the engine's raw scores, with each config's calibration.
    const readouts = golden.referenceReadouts(
      'laya_layout',
      goldens.configs,
      ran.map((r) => ({ type: r.g.question.type, logits: r.logits, config: r.g.config })),
    );
    let worst = 0;
    ran.forEach(({ g, answer }, i) => {
      // In the sent order (an object lists integer-like option names first).
      const got = golden.answerNumbers(answer, g);
      const expected = golden.readoutNumbers(readouts[i]!, answer.type);
      expect(got.length, g.name).toBe(expected.length);
      got.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - expected[j]!))));
    });
    console.info(`Laya: ${ran.length} answers, worst |Δ| to the reference readout ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  }, 300_000);

  it.skipIf(!hasNumpy)(
    'gives the numpy forward pass scores on the reference rows (fp32, within 1e-4)',
    async () => {
      const rows = goldens.results.filter(
        (r) => !r.refused && goldens.requests.find((q) => q.name === r.name)!.config === 'laya-typed',
      );
      expect(rows.length).toBeGreaterThan(10);
      const family = families.get('laya-typed')!;
      const got = await family.run(
        rows.map((r) => ({ tokens: r.ids!.length, ids: r.ids!, markers: r.markerPositions!, qtype: r.qtype! })),
      );
      const lines = golden
        .python(
          [golden.reference('laya_forward.py'), replica],
          rows
            .map((r) =>
              JSON.stringify({
                ids: r.ids,
                marker_pos: r.markerPositions,
                marker_mask: r.markerPositions!.map(() => true),
                qtype: r.qtype,
              }),
            )
            .join('\n'),
        )
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { logits: number[]; act_logits: number[] });
      let worst = 0;
      lines.forEach((want, i) => {
        want.logits.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - got[i]!.logits[j]!))));
        want.act_logits.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - got[i]!.act![j]!))));
      });
      expect(worst).toBeLessThan(1e-4);
    },
    120_000,
  );
});

describe('a Laya folder as the server runs it', () => {
  const requests = goldens.requests.filter((g) => g.config === 'laya-typed').map(golden.engineRequest);
  const probabilities = (a: Answer): number[] =>
    a.type === 'noul' ? [a.noul] : [...Object.values(a.probabilities), a.confidence];
  const distance = (x: Answer[], y: Answer[]): number =>
    Math.max(...x.flatMap((a, i) => probabilities(a).map((p, j) => Math.abs(p - probabilities(y[i]!)[j]!))));

  async function answersOf(e: Evaluator, many = false): Promise<Answer[]> {
    if (!many) return Promise.all(requests.map(async (r) => (await e.evaluate(r)).answers.q!));
    // All golden questions of the config as one request: their rows run in batches.
    const questions = Object.fromEntries(requests.map((r, i) => [`q${i}`, r.questions.q!]));
    const order = requests.map((r, i) => ({ id: `q${i}`, ...(r.order ? { options: r.order[0]!.options } : {}) }));
    const { answers } = await e.evaluate({ state: 'One shared state for every question.', questions, order });
    return requests.map((_, i) => answers[`q${i}`]!);
  }

  it('the split encoder + head export answers as the single graph', async () => {
    const dir = folderFor('laya-typed', ['encoder.onnx', 'head.onnx']);
    const split = await loadEvaluator({ modelDir: dir, threads: 1, engineThread: false });
    try {
      expect(split.graph).toMatch(/encoder\.onnx \+ .*head\.onnx$/);
      // The same fp32 operations cut in two graphs: scores within 1e-4, probabilities within 1e-4 / (4·0.5).
      expect(distance(await answersOf(split), await answersOf(evaluators.get('laya-typed')!))).toBeLessThan(5e-5);
    } finally {
      await split.close();
    }
  });

  it('rows of one request batched (padded, longest first, as under CUDA) answer as rows one by one (the CPU default)', async () => {
    const alone = evaluators.get('laya-typed')!;
    const batchedBy = await loadEvaluator({
      modelDir: folderFor('laya-typed'),
      threads: 1,
      engineThread: false,
      rowBatchTokens: 4096,
    });
    try {
      const before = batchedBy.stats().passes;
      const aloneBefore = alone.stats().passes;
      const batched = await answersOf(batchedBy, true);
      const single = await answersOf(alone, true);
      // Batches did run: fewer passes than rows (one by one: a pass per row).
      expect(batchedBy.stats().passes - before).toBeLessThan(requests.length / 2);
      expect(alone.stats().passes - aloneBefore).toBe(requests.length);
      // Padded keys are masked by −1e4 before the softmax: their weights are exactly 0; only the
      // GEMM's summation blocking may differ with the batch shape (fp32, ~1e-6 on these scores).
      expect(distance(batched, single)).toBeLessThan(1e-5);
    } finally {
      await batchedBy.close();
    }
  });

  it('over the engine thread: the family refusal crosses as a 422 BudgetError, truncation and act_logits as notes', async () => {
    const e = await loadEvaluator({ modelDir: folderFor('laya-en'), threads: 1 });
    try {
      const refusedName = goldens.results.find((r) => r.refused)!.name;
      const refused = golden.engineRequest(goldens.requests.find((g) => g.name === refusedName)!);
      const error = await e.evaluate(refused).catch((x: unknown) => x);
      expect(error).toBeInstanceOf(BudgetError);
      expect((error as Error).message).toMatch(/options fit; send fewer options/);
      const long = await e.evaluate({
        state: 'word '.repeat(2000),
        questions: {
          a: { type: 'noul', instructions: 'Long?' },
          b: { type: 'score', instructions: 'How long?', criteria: ['short', 'long'] },
        },
      });
      expect(long.notes?.truncated).toEqual({ a: ['state'], b: ['state'] });
      expect(Object.keys(long.notes?.actLogits ?? {})).toEqual(['a', 'b']);
      expect(long.usage.input_tokens).toBe(2 * 512); // both rows filled to max_len
      expect(e.stats().family).toBe('laya-markers');
    } finally {
      await e.close();
    }
  });
});

describe('a Laya folder with an mmBERT-style tokenizer (Gemma-style special names)', () => {
  it('reads its control tokens by the names tokenizer_config.json gives, and neutralises those names in user text', async () => {
    // The replica's tokenizer with mmBERT's naming: <cls> <sep> <mask> <pad> (AddedToken objects in
    // tokenizer_config.json), at the same ids, so the graph runs unchanged.
    const dir = folderFor('laya-typed');
    const mm = join(work, 'mmbert-style');
    cpSync(dir, mm, { recursive: true, dereference: false });
    const rename: Record<string, string> = { '[CLS]': '<cls>', '[SEP]': '<sep>', '[MASK]': '<mask>', '[PAD]': '<pad>' };
    const tokPath = join(mm, 'tokenizer', 'tokenizer.json');
    const tok = JSON.parse(readFileSync(tokPath, 'utf8')) as { added_tokens: Array<{ content: string }> };
    for (const t of tok.added_tokens) t.content = rename[t.content] ?? t.content;
    writeFileSync(tokPath, JSON.stringify(tok).replaceAll('"[CLS]"', '"<cls>"').replaceAll('"[SEP]"', '"<sep>"'));
    const named = (content: string) => ({
      content,
      lstrip: false,
      rstrip: false,
      normalized: false,
      single_word: false,
      special: true,
    });
    writeFileSync(
      join(mm, 'tokenizer', 'tokenizer_config.json'),
      JSON.stringify({
        cls_token: named('<cls>'),
        sep_token: named('<sep>'),
        mask_token: named('<mask>'),
        pad_token: named('<pad>'),
      }),
    );
    const family: LayaFamily = await openFamily('laya-markers', mm);
    const plain = families.get('laya-typed')!;
    try {
      const request = (text: string): EvaluateRequest => ({
        state: `a state with ${text} inside`,
        questions: { q: { type: 'choice', instructions: 'Which?', criteria: { a: null, b: null } } },
      });
      // The same row as the [CLS]-named tokenizer builds: the same ids in the same places.
      const mmRow = family.plan(request('<mask> and <sep>')).rows[0]!;
      const row = plain.plan(request('[MASK] and [SEP]')).rows[0]!;
      expect(mmRow.ids).toEqual(row.ids);
      expect(mmRow.markers).toEqual(row.markers);
      expect(mmRow.ids[0]).toBe(151647);
      // The literal control strings in the state became spaces: only the row's own markers are masks.
      expect(mmRow.ids.filter((id) => id === 151650)).toHaveLength(2);
    } finally {
      await family.close();
    }
  });
});

// Packing across requests: concurrent requests share one pass, and no token ever sees another
// request's tokens — a request's answers are those of a pass of its own, whatever it is packed with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePasses } from '../../src/engine/execution/batching.js';
import { AbortedError } from '../../src/engine/errors.js';
import { loadEvaluator, type EngineConfig, type Evaluator } from '../../src/engine/index.js';
import type { EvaluateResult, Question } from '../../src/engine/types.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { choice, expectClose, noul, request, score, tinyFp32, tinyInt8 } from './fixtures.js';

const STATES = [
  'The invoice was paid twice. Please refund it.',
  'Yes. Yes. Yes. The answer is Yes. Answer Yes. Yes!',
  'No no no no. Absolutely not. No.',
  { order: 4411, items: ['lamp', 'cable'], note: 'arrived broken' },
  'fox terrier fox terrier fox terrier 12 12 12',
  '日本語のテキスト、とても長い文章です。',
  ['a', 'b', 'c', 'd', 'e', 'f', 'g'],
  'The parcel is late.',
];
const QUESTIONS: Question[] = [noul, choice, score, noul, choice, score, noul, choice];
/** What other callers send alongside a request: their tokens must not move its answers. */
const NEIGHBOURS = [
  'Yes yes yes',
  '日本語のテキスト、とても長い文章です。'.repeat(20),
  '!!!!!!!!!!!!!!!!!!!!!!!!'.repeat(30),
  'zzzz 0000 ~~~~ '.repeat(40),
];
const VICTIM = request({ q: noul }, 'The invoice was paid twice. Please refund it.');

describe('packing across requests', () => {
  const open: Evaluator[] = [];
  let modelDir: string;
  const load = async (o: Omit<EngineConfig, 'modelDir'> & { modelDir?: string }) => {
    // Planning inline: the requests reach the session together, as they do behind a slow pass.
    const e = await loadEvaluator({ modelDir, threads: 1, plannerThreads: 0, ...o });
    open.push(e);
    return e;
  };
  beforeAll(async () => {
    modelDir = await tinyFp32();
  });
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  it('merges trees with their roots kept and indices offset', () => {
    const a = { tokens: [1, 2, 3], parents: [-1, 0, 1], reads: [{ at: 2, candidates: [7] }] };
    const b = {
      tokens: [4, 5, 6],
      parents: [-1, 0, 0],
      reads: [
        { at: 1, candidates: [8] },
        { at: 2, candidates: [9] },
      ],
    };
    expect(mergePasses([a, b])).toEqual({
      tokens: [1, 2, 3, 4, 5, 6],
      parents: [-1, 0, 1, -1, 3, 3],
      reads: [
        { at: 2, candidates: [7] },
        { at: 4, candidates: [8] },
        { at: 5, candidates: [9] },
      ],
    });
  });

  it('8 concurrent one-question requests share passes, and each gets the answers it gets alone', async () => {
    const batched = await load({ prefixCacheBytes: 0, batchTokens: 4096 });
    const alone = await load({ prefixCacheBytes: 0, batchTokens: 0 });
    const solo: EvaluateResult[] = [];
    for (let i = 0; i < 8; i++) solo.push(await alone.evaluate(request({ q: QUESTIONS[i]! }, STATES[i]!)));
    expect(alone.stats().passes).toBe(8);
    const together = await Promise.all(STATES.map((s, i) => batched.evaluate(request({ q: QUESTIONS[i]! }, s))));
    // The first request finds the session free and runs alone; the others wait and go together.
    expect(batched.stats().passes).toBeLessThan(8);
    together.forEach((r, i) => {
      expect(r.usage).toEqual(solo[i]!.usage);
      expectClose(solo[i]!.answers.q!, r.answers.q!, 1e-4);
    });
  });

  it('multi-question requests with the prefix cache off ride along too, answers unchanged', async () => {
    const batched = await load({ prefixCacheBytes: 0, batchTokens: 4096 });
    const alone = await load({ prefixCacheBytes: 0, batchTokens: 0 });
    const qs = { n: noul, c: choice, s: score };
    const solo: EvaluateResult[] = [];
    for (const s of STATES.slice(0, 4)) solo.push(await alone.evaluate(request(qs, s)));
    const together = await Promise.all(STATES.slice(0, 4).map((s) => batched.evaluate(request(qs, s))));
    expect(batched.stats().passes).toBeLessThan(4);
    together.forEach((r, i) => {
      for (const k of Object.keys(qs)) expectClose(solo[i]!.answers[k]!, r.answers[k]!, 1e-4);
    });
  });

  it('is off by default on CPU (a shared pass costs more than its parts there)', async () => {
    const cpu = await load({ prefixCacheBytes: 0 });
    await Promise.all(STATES.slice(0, 4).map((s, i) => cpu.evaluate(request({ q: QUESTIONS[i]! }, s))));
    expect(cpu.stats().passes).toBe(4);
  });

  it('a budget smaller than two requests keeps each in a pass of its own', async () => {
    const small = await load({ prefixCacheBytes: 0, batchTokens: 8 });
    await Promise.all(STATES.slice(0, 4).map((s, i) => small.evaluate(request({ q: QUESTIONS[i]! }, s))));
    expect(small.stats().passes).toBe(4);
  });

  /** The victim's answer when it waits behind a running request with one neighbour, for each neighbour. */
  const besideEachNeighbour = async (e: Evaluator): Promise<number[]> => {
    const out: number[] = [];
    for (const text of NEIGHBOURS) {
      // The first request occupies the session, so the victim and the neighbour wait together.
      const [, victim] = await Promise.all([
        e.evaluate(request({ q: choice }, 'first in line')),
        e.evaluate(VICTIM),
        e.evaluate(request({ q: noul }, text)),
      ]);
      const answer = victim.answers.q!;
      out.push(answer.type === 'noul' ? answer.noul : NaN);
    }
    return out;
  };

  it('a dynamic int8 export, quantized per token at load, with fused attention: never shares a pass across requests, says so, and answers as alone', async () => {
    // Its state and question tokens run in passes of their own kinds (docs/engine.md, Exactness
    // across passes); a shared pass holds whole prompts.
    const modelDir = await tinyInt8();
    const warnings: string[] = [];
    const int8 = await load({
      modelDir,
      prefixCacheBytes: 0,
      batchTokens: 4096,
      onNote: (m) => warnings.push(m.message),
    });
    expect(warnings.filter((w) => /packing across requests is off: this int8 graph/.test(w))).toHaveLength(1);
    const alone = await load({ modelDir, prefixCacheBytes: 0, batchTokens: 0 });
    const solo = (await alone.evaluate(VICTIM)).answers.q!;
    const answers = await besideEachNeighbour(int8);
    for (const p of answers) expect(p).toBe(solo.type === 'noul' ? solo.noul : NaN);
    await besideEachNeighbour(alone);
    expect(int8.stats().passes).toBe(alone.stats().passes - 2); // the solo request's two passes
  });

  it('the same export with --no-fused-attention shares passes across requests, and each answer is the one it gets alone', async () => {
    // Per-tensor activation scales moved the victim's P(yes) with its neighbours (0.272 alone,
    // 0.262 / 0.282 beside two of them); each token quantized on its own, and attention summed in
    // float64 in every pass, leave the same bits.
    const modelDir = await tinyInt8();
    const warnings: string[] = [];
    const settings = { modelDir, prefixCacheBytes: 0, fusedAttention: false };
    const int8 = await load({ ...settings, batchTokens: 4096, onNote: (m) => warnings.push(m.message) });
    expect(warnings.filter((w) => /packing across requests/.test(w))).toEqual([]);
    const alone = await load({ ...settings, batchTokens: 0 });
    const solo = (await alone.evaluate(VICTIM)).answers.q!;
    const answers = await besideEachNeighbour(int8);
    for (const p of answers) expect(p).toBe(solo.type === 'noul' ? solo.noul : NaN);
    await besideEachNeighbour(alone);
    expect(int8.stats().passes).toBeLessThan(alone.stats().passes);
  });

  it('with --no-per-token-int8 (one activation scale per pass) it never shares a pass across requests, and says so at load', async () => {
    const modelDir = await tinyInt8();
    const warnings: string[] = [];
    const int8 = await load({
      modelDir,
      perTokenInt8: false,
      prefixCacheBytes: 0,
      batchTokens: 4096,
      onNote: (m) => warnings.push(m.message),
    });
    expect(warnings.filter((w) => /packing across requests is off/.test(w))).toHaveLength(1);
    const alone = await load({ modelDir, perTokenInt8: false, prefixCacheBytes: 0, batchTokens: 0 });
    const solo = (await alone.evaluate(VICTIM)).answers.q!;
    const answers = await besideEachNeighbour(int8);
    for (const p of answers) expect(p).toBe(solo.type === 'noul' ? solo.noul : NaN);
    // The same passes as an engine that never shares one.
    await besideEachNeighbour(alone);
    expect(int8.stats().passes).toBe(alone.stats().passes - 1);
  });

  it('a 4-bit export (per-block activation scales) shares passes, and the answers do not move with the neighbours', async () => {
    // Unfused: its products become per-token int8 ones at load, whose fused graph splits prompts as above.
    const modelDir = await ensureFlavor({ dtype: 'q4' });
    const warnings: string[] = [];
    const q4 = await load({
      modelDir,
      prefixCacheBytes: 0,
      batchTokens: 4096,
      fusedAttention: false,
      onNote: (m) => warnings.push(m.message),
    });
    expect(warnings.filter((w) => /packing across requests/.test(w))).toEqual([]);
    const answers = await besideEachNeighbour(q4);
    const apart = await load({ modelDir, prefixCacheBytes: 0, batchTokens: 0, fusedAttention: false });
    await besideEachNeighbour(apart);
    expect(q4.stats().passes).toBeLessThan(apart.stats().passes);
    expect(new Set(answers).size).toBe(1);
  });

  it('a request aborted while waiting leaves; the others are answered', async () => {
    const batched = await load({ prefixCacheBytes: 0, batchTokens: 4096 });
    const controller = new AbortController();
    const runs = STATES.slice(0, 5).map((s, i) =>
      batched.evaluate(request({ q: QUESTIONS[i]! }, s), i === 3 ? { signal: controller.signal } : {}),
    );
    controller.abort();
    const settled = await Promise.allSettled(runs);
    expect(settled[3]!.status).toBe('rejected');
    if (settled[3]!.status === 'rejected') expect(settled[3]!.reason).toBeInstanceOf(AbortedError);
    for (const i of [0, 1, 2, 4]) expect(settled[i]!.status).toBe('fulfilled');
  });
});

// Fused attention (src/engine/model/fuse-attention.ts): at load, attention written in plain ops
// becomes onnxruntime's GroupQueryAttention. It must apply to every export whose attention matches,
// leave the others as they are (saying why), change no answer beyond what a different summation
// order can, and keep the masks of the passes that need their own (packed questions).
//
// Tolerances, derived from the fp32 reference (the unfused graph) and fp32 rounding, not measured:
// - fp32: flash attention (tiles of keys, an online softmax) and the plain ops (one row of scores,
//   one softmax, one product with V) compute the same sums in another order. Each attention output
//   then differs by a few units of fp32 rounding (u = 6e-8) times √T for the T ≤ 1,300 keys summed
//   here (a random-walk bound: ≈ 2e-6 relative), carried through 2 layers into logits; softmax
//   moves a probability by at most 1/4 of a logit change. Probabilities within 1e-5 (the metamorphic
//   suite's bound) leave a margin of several times that.
// - int8: per-token int8 quantizes each activation row to 8 bits; a rounding-order change of 1e-7
//   can move one element across a rounding boundary, and then a logit by a quantization step. So
//   the fused int8 graph is held to the int8 graph's own error budget against its fp32 twin: its
//   distance to fp32 at most twice the unfused one's, plus 1e-5.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EvaluateResult, type Evaluator, type Question } from '../../src/engine/index.js';
import { decodeModel, rewriteHead, BIAS_INPUT } from '../../src/engine/model/graph-rewrite.js';
import { attentionShape, fuseAttention } from '../../src/engine/model/fuse-attention.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner, type KvCache } from '../../src/engine/model/runner.js';
import { createModelPool } from '../../src/service/model-pool.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { choice, manyQuestions, maxDiff, noul, request, score, tinyFp32, tinyInt8 } from './fixtures.js';

const LAYERS = 2; // the tiny shape's

/** A state of about `words` words of varied prose (two to three tokens each). */
function longState(words: number): string {
  const vocabulary = ['river', 'ledger', 'quarterly', 'Zürich', '東京', 'invoice', 'refund', 'pump', 'shipment', '42'];
  return Array.from({ length: words }, (_, i) => vocabulary[(i * 7 + (i >> 3)) % vocabulary.length]).join(' ');
}

const QUESTIONS: Record<string, Question> = { ...manyQuestions(9), n: noul, c: choice, s: score };

describe('fused attention: where it applies', () => {
  it('fuses every layer of the plain-attention exports and says so at load; --no-fused-attention keeps them', async () => {
    for (const dir of [await tinyFp32(), await tinyInt8(), await ensureFlavor({ dtype: 'fp16' })]) {
      const notes: string[] = [];
      const folder = await openModelFolder(dir);
      const fused = await ModelRunner.create(folder, {
        modelDir: dir,
        threads: 1,
        onNote: (m) => notes.push(m.message),
      });
      expect(fused.fusedLayers, dir).toBe(LAYERS);
      expect(notes).toContain(`fused into GroupQueryAttention in ${LAYERS} layers`);
      await fused.close();
      const plain = await ModelRunner.create(folder, { modelDir: dir, threads: 1, fusedAttention: false });
      expect(plain.fusedLayers).toBe(0);
      expect(plain.packs).toBe(true);
      await plain.close();
    }
  });

  it('leaves an export that already runs GroupQueryAttention as it is, saying why', async () => {
    const dir = await ensureFlavor({ dtype: 'fp32', attention: 'gqa' });
    const notes: string[] = [];
    const runner = await ModelRunner.create(await openModelFolder(dir), {
      modelDir: dir,
      threads: 1,
      onNote: (m) => notes.push(m.message),
    });
    expect(runner.fusedLayers).toBe(0);
    expect(notes.join('\n')).toMatch(/as exported, not fused \(the export already uses a fused attention op\)/);
    await runner.close();
  });

  it('leaves a graph whose attention does not match untouched, naming the layer and what differs', async () => {
    const dir = await tinyFp32();
    const model = decodeModel(readFileSync(join(dir, 'onnx', 'model.onnx')));
    expect(rewriteHead(model, 151936)).toBe(true);
    // The second layer's scores scaled by a tensor computed at run time, not a constant.
    const nodes = model.graph!.node!;
    const softmax = nodes.filter((n) => n.opType === 'Softmax')[1]!;
    const add = nodes.find((n) => n.output![0] === softmax.input![0])!;
    const scaled = nodes.find((n) => n.output![0] === add.input!.find((i) => !i.includes('mask')))!;
    expect(scaled.opType).toBe('Mul');
    scaled.input![1] = 'attention_mask_as_float';
    nodes.unshift({
      opType: 'Cast',
      input: ['attention_mask'],
      output: ['attention_mask_as_float'],
      attribute: [{ name: 'to', type: 2, i: 1 }],
    });
    const before = model.graph!.node!.length;
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const fusion = fuseAttention(model, attentionShape(config), 'cpu', BIAS_INPUT);
    expect(fusion).toEqual({
      skipped: 'layer 2 does not match: a Mul on the scores by something other than a constant',
    });
    expect(model.graph!.node!.length).toBe(before);
    expect(model.graph!.node!.some((n) => n.opType === 'GroupQueryAttention' || n.opType === 'If')).toBe(false);
  });

  it('is not applied where the fused op would change what is computed (sliding window, capped logits)', () => {
    const base = { num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16 };
    expect(attentionShape(base)).toEqual({ heads: 4, kvHeads: 2, headDim: 16 });
    expect(attentionShape({ ...base, use_sliding_window: true })).toMatch(/sliding-window/);
    expect(attentionShape({ ...base, attn_logit_softcapping: 50 })).toMatch(/caps/);
    expect(attentionShape({ num_attention_heads: 4 })).toMatch(/does not give the heads/);
  });

  it('a registry entry with "fused_attention": false keeps its attention as exported', async () => {
    const dir = await tinyFp32();
    const registry = checkRegistry(
      {
        default: 'fused',
        models: {
          fused: { path: dir, description: 'fused', release_date: '2026-11-27' },
          plain: { path: dir, description: 'plain', release_date: '2026-11-27', fused_attention: false },
        },
        aliases: {},
      },
      '/tmp/assay-fused-registry.json',
    );
    const notes: Array<{ model: string; note: string }> = [];
    const log = {
      info: (o: object, msg?: string) => {
        if (msg === 'model attention') notes.push(o as { model: string; note: string });
      },
      warn: () => {},
    };
    const pool = createModelPool(registry, { threads: 1 }, log);
    try {
      const fused = await pool.preload();
      const lease = await pool.acquire('plain');
      try {
        const r = request({ n: noul }, 'A state.');
        // Same answers through both (fp32, short state), and only the fused one said so at load.
        expect(maxDiff(await fused.evaluate(r), await lease.evaluator.evaluate(r))).toBeLessThanOrEqual(1e-5);
      } finally {
        lease.release();
      }
      expect(notes.map((n) => n.model)).toEqual(['fused']);
    } finally {
      await pool.close();
    }
  });
});

describe('fused attention: answers', () => {
  const engines: Record<string, Evaluator> = {};
  beforeAll(async () => {
    const fp32 = await tinyFp32();
    const int8 = await tinyInt8();
    // Chunked prefill (pieces of 256 over the growing past) as served.
    const open = (modelDir: string, fusedAttention: boolean) =>
      loadEvaluator({ modelDir, threads: 1, fusedAttention, prefillChunk: 256, prefixCacheBytes: 1 << 26 });
    engines.fp32 = await open(fp32, false);
    engines.fp32Fused = await open(fp32, true);
    engines.int8 = await open(int8, false);
    engines.int8Fused = await open(int8, true);
  });
  afterAll(async () => {
    for (const e of Object.values(engines)) await e.close();
  });

  const STATE = longState(500); // about 1,300 tokens: five prefill pieces

  it('fp32: a long state × 12 questions answers as the unfused graph does (1e-5), cold and cached', async () => {
    const r = request(QUESTIONS, STATE);
    const reference = await engines.fp32!.evaluate(r);
    const cold = await engines.fp32Fused!.evaluate(r);
    const cached = await engines.fp32Fused!.evaluate(r);
    expect(cold.usage.input_tokens).toBeGreaterThan(1000);
    expect(cold.usage).toEqual(reference.usage);
    expect(maxDiff(cold, reference)).toBeLessThanOrEqual(1e-5);
    expect(maxDiff(cached, cold)).toBeLessThanOrEqual(1e-5);
  });

  it('int8: within the int8 graph’s own distance to its fp32 twin', async () => {
    const r = request(QUESTIONS, STATE);
    const twin = await engines.fp32!.evaluate(r);
    const unfused = await engines.int8!.evaluate(r);
    const fused = await engines.int8Fused!.evaluate(r);
    const budget = 2 * maxDiff(unfused, twin) + 1e-5;
    expect(maxDiff(fused, twin)).toBeLessThanOrEqual(budget);
  });

  it('a question packed with others answers as it does alone (the packed pass keeps its mask)', async () => {
    const together: EvaluateResult = await engines.fp32Fused!.evaluate(request(QUESTIONS, STATE));
    for (const key of ['q0', 'c', 's']) {
      const alone = await engines.fp32Fused!.evaluate(request({ [key]: QUESTIONS[key]! }, STATE));
      expect(maxDiff(together, alone, [key]), key).toBeLessThanOrEqual(1e-5);
    }
  });
});

describe('fused attention: short passes', () => {
  // The same past for both graphs (from the unfused one), then 12 question tokens.
  const ids = Array.from({ length: 200 }, (_, i) => 2000 + ((i * 53) % 7000));
  const question = [14582, 25, 3555, 279, 1467, 6286, 264, 7640, 30, 21806, 25, 220];
  const candidates = [[9454, 2753, 32, 33]];

  /** Runs `check` on the fused and the unfused graph of `dir` and the past of `ids`, then closes both. */
  async function fusedAndPlain(
    dir: string,
    check: (fused: ModelRunner, plain: ModelRunner, past: KvCache) => Promise<void>,
  ): Promise<void> {
    const folder = await openModelFolder(dir);
    const fused = await ModelRunner.create(folder, { modelDir: dir, threads: 1 });
    const plain = await ModelRunner.create(folder, { modelDir: dir, threads: 1, fusedAttention: false });
    try {
      await check(fused, plain, (await plain.forward(ids, null, [], true)).present!);
    } finally {
      await fused.close();
      await plain.close();
    }
  }

  it('fp32: a question’s few tokens over a cached state compute as the unfused graph does (the exported branch)', async () => {
    await fusedAndPlain(await tinyFp32(), async (fused, plain, past) => {
      // Under 64 rows, the fused graph takes the layer's exported attention: the same ops, the same bits.
      const a = (await fused.forward(question, past, candidates, false)).logprobs[0]!;
      const b = (await plain.forward(question, past, candidates, false)).logprobs[0]!;
      expect(a).toEqual(b);
    });
  });

  it('int8: a question’s packed pass over a cached state computes as the unfused graph’s (float64 attention in both)', async () => {
    await fusedAndPlain(await tinyInt8(), async (fused, plain, past) => {
      // An int8 graph runs every causal pass fused and every masked pass through its exported
      // attention, summed in float64 (exact-attention.ts), as the unfused graph runs all of them.
      expect(fused.splitsPrompt).toBe(true);
      expect(plain.splitsPrompt).toBe(false);
      const pass = {
        tokens: question,
        parents: question.map((_, i) => i - 1),
        reads: [{ at: question.length - 1, candidates: candidates[0]! }],
      };
      expect(await fused.packed(pass, past)).toEqual(await plain.packed(pass, past));
    });
  });
});

describe('fused attention: the packed pass', () => {
  let runner: ModelRunner;
  beforeAll(async () => {
    const dir = await tinyFp32();
    runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
    expect(runner.fusedLayers).toBe(LAYERS);
    expect(runner.packs).toBe(true);
  });
  afterAll(() => runner.close());

  it('each branch sees the past and its own tokens only; seeing a neighbour would move its answer', async () => {
    const past = (
      await runner.forward(
        Array.from({ length: 300 }, (_, i) => 1000 + ((i * 37) % 5000)),
        null,
        [],
        true,
      )
    ).present!;
    const a = [9454, 11, 3555, 13];
    const b = [2753, 25, 7414];
    const candidates = [32, 33, 34, 9454];
    // Two branches on the past: a then b, b's first token continuing the past (not a).
    const packed = await runner.packed(
      {
        tokens: [...a, ...b],
        parents: [-1, 0, 1, 2, -1, 4, 5],
        reads: [
          { at: 3, candidates },
          { at: 6, candidates },
        ],
      },
      past,
    );
    const aloneA = (await runner.forward(a, past, [candidates], false)).logprobs[0]!;
    const aloneB = (await runner.forward(b, past, [candidates], false)).logprobs[0]!;
    const diff = (x: number[], y: number[]) => Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
    // Log-probabilities: 1e-5 relative to values of order 10 (the probability bound's reasoning).
    expect(diff(packed[0]!, aloneA)).toBeLessThanOrEqual(1e-4);
    expect(diff(packed[1]!, aloneB)).toBeLessThanOrEqual(1e-4);
    // What a lost mask would give: b after a (b sees a's tokens), far from b alone.
    const leaked = (await runner.forward([...a, ...b], past, [candidates], false)).logprobs[0]!;
    expect(diff(leaked, aloneB)).toBeGreaterThan(1e-2);
  });
});

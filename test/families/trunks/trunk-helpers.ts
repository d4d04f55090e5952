// What the real-trunk replica tests share (one file per family): each family's replicas on the
// three trunk kinds (tools/trunks/replicas.ts: Qwen3 attention-only, Qwen3.5 hybrid with Gated
// DeltaNet as an ONNX Scan, Gemma 3 with sliding windows), exported by torch.onnx.export at test
// time, and held to:
// - the family's published contract: the toy replica's inputs and outputs (i64 rows and positions,
//   no attention-mask input), weights in model.onnx_data (BF16 with a Cast each, or fp32), and the
//   trunk's structure (a Scan per DeltaNet layer and a causal Conv on the hybrid, no Scan elsewhere);
// - its torch module: onnxruntime on export.py's probe batch (rows of 333, 70, 129 and 5 tokens,
//   right-padded to 384 with the pad id) gives the module's own float32 outputs within
//   1e-5 · (1 + max |output|): both are float32 runs of one function whose only difference is the
//   kernels' summation order (measured ≤ 1e-6 relative), while a structural slip (a position off by
//   one, a chunk's state not carried, a window one key too wide, a padded key that leaks) moves
//   outputs by 1e-2 or more;
// - the goldens (test/families/trunks/<family>.json, tools/trunks/goldens.ts): the folder holds the
//   weights they were made with (the digest), the references rerun live give the stored rows and
//   outputs (on one trunk per family), and Assay as it serves them (the state read once: the
//   export rewritten at load into a continuation graph, each question's row from the state's
//   snapshot; reuse.test.ts holds it to the whole rows bit for bit) answers every golden request
//   within 1e-5 of the reference answers, its usage the state's snapshot once: the reference's outputs are
//   float64 (each row alone, unpadded, DeltaNet token by token); fp32 moves the heads' outputs by
//   ~1e-6 relative, which moves a probability by well under 1e-5 at the replicas' temperatures
//   (≥ 1), while the trunks' answers differ from one another by more than 1e-3 (checked), so the
//   bound tells a wrong trunk apart.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EngineNote, type Evaluator } from '../../../src/engine/index.js';
import type { Answer } from '../../../src/engine/types.js';
import {
  FAMILY_REFERENCES,
  referenceForward,
  trunkGoldensFile,
  trunkRequests,
  type TrunkGoldens,
} from '../../../tools/trunks/goldens.js';
import {
  ensureTrunkReplicas,
  hasTorch,
  storageOf,
  trunkConfig,
  TRUNK_KINDS,
  type TrunkFamily,
  type TrunkKind,
} from '../../../tools/trunks/replicas.js';
import { deciderRequest } from '../decider-helpers.js';
import * as golden from '../golden-helpers.js';
import { graphIo } from '../replica-helpers.js';

/** Each family's contract: its inputs and its output, as graphIo writes them (7 = int64, 1 = float). */
const CONTRACTS: Record<TrunkFamily, { inputs: string[]; output: string }> = {
  kev: { inputs: ['input_ids:7[rows,seq]', 'decide_pos:7[rows]', 'opt_pos:7[rows,k]'], output: 'scores:1[rows,k]' },
  decision: {
    inputs: ['input_ids:7[rows,seq]', 'query_pos:7[rows]', 'cand_pos:7[rows,k]'],
    output: 'logits:1[rows,k]',
  },
  'decider-slots': { inputs: ['input_ids:7[rows,seq]', 'slot_pos:7[rows]'], output: 'label_logits:1[rows,255]' },
  arbiter: { inputs: ['input_ids:7[rows,seq]', 'last_pos:7[rows]'], output: 'scores:1[rows,24]' },
};

/** The trunk each family reruns its references live on. */
const LIVE_TRUNK: Record<TrunkFamily, TrunkKind> = {
  kev: 'qwen3',
  decision: 'qwen35',
  'decider-slots': 'qwen35',
  arbiter: 'gemma3',
};

/**
 * How many nodes of each operator a graph holds (its main graph), and how many of its initializers
 * are BF16 each read by a Cast to float32 (the published exports' storage of their base weights).
 */
function graphShape(file: string): { ops: Map<string, number>; bf16: number; bf16Cast: number } {
  const g = onnxProto.onnx.ModelProto.decode(readFileSync(file)).graph!;
  const ops = new Map<string, number>();
  for (const n of g.node!) ops.set(n.opType!, (ops.get(n.opType!) ?? 0) + 1);
  const bf16 = new Set(g.initializer!.filter((t) => t.dataType === 16).map((t) => t.name!));
  const casts = g.node!.filter((n) => n.opType === 'Cast' && bf16.has(n.input![0]!));
  const toFloat = casts.filter((n) => n.attribute!.some((a) => a.name === 'to' && Number(a.i) === 1));
  return { ops, bf16: bf16.size, bf16Cast: toFloat.length };
}

interface Probe {
  inputs: Record<string, { dims: number[]; data: number[] }>;
  outputs: Record<string, { dims: number[]; data: number[] }>;
}

/** The worst |Δ| of the graph's output to the torch module's on probe.json, and the output's scale. */
async function probeCheck(dir: string): Promise<{ worst: number; scale: number }> {
  const probe = JSON.parse(readFileSync(join(dir, 'probe.json'), 'utf8')) as Probe;
  const session = await ort.InferenceSession.create(join(dir, 'model.onnx'), { intraOpNumThreads: 1 });
  try {
    const feeds = Object.fromEntries(
      Object.entries(probe.inputs).map(([name, t]) => [
        name,
        new ort.Tensor('int64', BigInt64Array.from(t.data, BigInt), t.dims),
      ]),
    );
    const out = await session.run(feeds);
    let worst = 0;
    let scale = 0;
    for (const [name, want] of Object.entries(probe.outputs)) {
      const got = out[name]!;
      expect(got.dims).toEqual(want.dims);
      const data = got.data as Float32Array;
      want.data.forEach((x, i) => {
        worst = Math.max(worst, Math.abs(x - data[i]!));
        scale = Math.max(scale, Math.abs(x));
      });
    }
    return { worst, scale };
  } finally {
    await session.release();
  }
}

/** An answer's numbers in the reference readout's order (decider: the engine's probabilities). */
function answerNumbers(family: TrunkFamily, a: Answer, q: { type: string; criteria?: unknown }): number[] {
  if (family === 'decider-slots') {
    if (a.type === 'noul') return [a.noul, 1 - a.noul];
    const keys =
      q.type === 'choice'
        ? (q.criteria as Array<[string, unknown]>).map(([n]) => n)
        : (q.criteria as unknown[]).map((_, j) => String(j));
    return keys.map((k) => a.probabilities[k]!);
  }
  return golden.answerNumbers(a, { name: '', state: null, question: q as never });
}

function wantNumbers(family: TrunkFamily, r: golden.ReadoutNumbers, type: string): number[] {
  return family === 'decider-slots' ? r.probabilities : golden.readoutNumbers(r, type as never);
}

/** The largest |Δ| between two trunks' answers to the same goldens. */
function trunkSpread(g: TrunkGoldens, a: TrunkKind, b: TrunkKind): number {
  let spread = 0;
  g.results[a].forEach((r, i) => {
    for (const [key, want] of Object.entries(r.answers)) {
      const other = g.results[b][i]!.answers[key]!;
      want.probabilities.forEach((p, j) => (spread = Math.max(spread, Math.abs(p - other.probabilities[j]!))));
    }
  });
  return spread;
}

/** The tests of one family's replicas on every trunk kind. */
export function describeTrunkFamily(family: TrunkFamily): void {
  const torch = hasTorch(`the ${family} replicas on real trunks`);
  const goldens = golden.readGoldens<TrunkGoldens>(trunkGoldensFile(family));

  it('the goldens tell the trunks apart (their answers differ by more than 1e-3 between any two)', () => {
    for (const [a, b] of [
      ['qwen3', 'qwen35'],
      ['qwen3', 'gemma3'],
      ['qwen35', 'gemma3'],
    ] as const)
      expect(trunkSpread(goldens, a, b), `${a} vs ${b}`).toBeGreaterThan(1e-3);
  });

  it('the goldens hold the requests the generator makes', () => {
    expect(JSON.parse(JSON.stringify(trunkRequests()))).toEqual(goldens.requests);
  });

  describe.skipIf(!torch)(`${family} on real trunks (exported by torch.onnx.export)`, () => {
    let dirs: string[] = [];
    beforeAll(async () => {
      dirs = await ensureTrunkReplicas(TRUNK_KINDS.map((trunk) => ({ family, trunk })));
    }, 600_000);

    describe.each(TRUNK_KINDS.map((trunk, i) => [trunk, i] as const))('on the %s trunk', (trunk, i) => {
      let evaluator: Evaluator;
      const notes: EngineNote[] = [];
      beforeAll(async () => {
        evaluator = await loadEvaluator({
          modelDir: dirs[i]!,
          threads: 1,
          engineThread: false,
          rowBatchTokens: 16_384,
          graphCacheDir: mkdtempSync(join(tmpdir(), 'assay-trunk-graphs-')),
          onNote: (note) => notes.push(note),
        });
      }, 120_000);
      afterAll(async () => {
        await evaluator?.close();
      });

      it("is in the family's published contract, its trunk's structure in the graph", () => {
        const file = join(dirs[i]!, 'model.onnx');
        const io = graphIo(file);
        expect(io.inputs).toEqual(CONTRACTS[family].inputs);
        expect(io.outputs).toEqual([CONTRACTS[family].output]);
        expect(io.external).toEqual(['model.onnx_data']);
        const { ops, bf16, bf16Cast } = graphShape(file);
        const { storage } = storageOf({ family, trunk });
        // every matrix BF16 with its Cast (storage 'bf16'), or none (fp32)
        expect(bf16Cast, 'BF16 initializers each cast to float32').toBe(bf16);
        expect(bf16 > 5 * (trunkConfig(dirs[i]!).shape as { layers: number }).layers).toBe(storage === 'bf16');
        const shape = trunkConfig(dirs[i]!).shape as { layers: number; full_every?: number };
        if (trunk === 'qwen35') {
          const deltaNets = shape.layers - Math.floor(shape.layers / shape.full_every!);
          expect(ops.get('Scan'), 'one Scan over the chunks per DeltaNet layer').toBe(deltaNets);
          expect(ops.get('Conv')).toBe(deltaNets);
        } else expect(ops.has('Scan') || ops.has('Loop') || ops.has('Conv')).toBe(false);
      });

      it('gives its torch module’s outputs on the probe batch (within 1e-5 · (1 + max |y|))', async () => {
        const { worst, scale } = await probeCheck(dirs[i]!);
        console.info(
          `${family}-${trunk}: graph vs torch module, worst |Δ| ${worst.toExponential(2)} (max |y| ${scale.toFixed(2)})`,
        );
        expect(worst).toBeLessThan(1e-5 * (1 + scale));
      });

      it('holds the weights its goldens were made with', () => {
        expect(trunkConfig(dirs[i]!).digest).toBe(goldens.digests[trunk]);
      });

      // one trunk per family (each trunk kind, and Arbiter's mask from last_pos, checked by one): the
      // float64 reference takes seconds a trunk, and the digests hold the other folders to the goldens
      if (trunk === LIVE_TRUNK[family])
        it('its goldens are current: the references, run live, lay out and compute the stored rows', () => {
          // short rows: the float64 reference is slow on long ones (the answers test covers those)
          const picked = [0, 4];
          const reqs = picked.map((n) => goldens.requests[n]!);
          const laid = FAMILY_REFERENCES[family].layout(reqs);
          const fresh = referenceForward(dirs[i]!, laid.flat());
          expect(fresh.digest).toBe(goldens.digests[trunk]);
          let at = 0;
          picked.forEach((n, j) => {
            const stored = goldens.results[trunk][n]!;
            expect(laid[j]!.map(({ key, tokens, positions }) => ({ key, tokens, positions }))).toEqual(
              stored.rows.map(({ key, tokens, positions }) => ({ key, tokens, positions })),
            );
            for (const want of stored.outputs) {
              const got = fresh.outputs[at++]!;
              // stored to 9 significant digits
              want.forEach((x, k) => expect(Math.abs(got[k]! - x)).toBeLessThan(1e-8 * (1 + Math.abs(x))));
            }
          });
        }, 120_000);

      it('answers every golden request within 1e-5 of the reference, the state read once (and its usage once)', async () => {
        expect(notes.map((n) => n.kind)).toContain('reuse');
        expect(evaluator.stats().prefixReuse).toBe(true);
        let worst = 0;
        let questions = 0;
        for (const [n, g] of goldens.requests.entries()) {
          const ref = goldens.results[trunk][n]!;
          expect(ref.name).toBe(g.name);
          const result = await evaluator.evaluate(deciderRequest(g as never));
          // whole rows read the state's P tokens in every row; read once, they count once
          const shared = result.usageParts?.shared.input_tokens;
          expect(shared, `${g.name}: usage split`).toBeDefined();
          expect(shared! % 64, g.name).toBe(0);
          expect(result.usage.input_tokens + (ref.rows.length - 1) * shared!, g.name).toBe(
            ref.rows.reduce((s, r) => s + r.tokens, 0),
          );
          for (const [key, q] of g.questions) {
            const got = answerNumbers(family, result.answers[key] as Answer, q);
            const want = wantNumbers(family, ref.answers[key]!, q.type);
            expect(got, `${g.name} ${key}`).toHaveLength(want.length);
            got.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want[j]!))));
            questions++;
          }
        }
        console.info(`${family}-${trunk}: ${questions} answers vs the goldens, worst |Δ| ${worst.toExponential(2)}`);
        expect(worst).toBeLessThan(1e-5);
      }, 300_000);
    });
  });
}

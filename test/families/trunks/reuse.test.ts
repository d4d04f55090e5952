// The state read once, on every real-trunk replica (4 families × Qwen3 attention-only, Qwen3.5
// hybrid, Gemma 3 sliding window): the export's continuation graph (src/engine/model/row-reuse/)
// runs each golden request's shared state once into a snapshot and each question's row from it,
// and must give
// - the whole rows' head outputs (the export as published, in one batched run) within
//   1e-5 · (1 + max |y|): both are float32 evaluations of one function; what differs is only the
//   kernels' summation order (a row's attention over P + T keys instead of over its padded length,
//   matrix products of other shapes), ≈ 1e-7 relative, the bound the replica tests hold the graph to
//   against its torch module. A structural slip (a position off by one, a conv tail off by one, a
//   recurrence not fed) moves them by 1e-2 or more (reuse-cases.test.ts shows each);
// - every golden's answer within 1e-5 of the independent reference (the goldens of
//   test/families/trunks/<family>.json, float64 references; the readout is the family's own
//   probabilities function), as the whole rows do (trunk-helpers.ts);
// - the same outputs for a row run alone (B = 1) as among the request's rows (B > 1).
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CausalPlan } from '../../../src/engine/families/causal/plan.js';
import type { RowReader } from '../../../src/engine/families/rows/family.js';
import { snapshotLength, type RowReuse } from '../../../src/engine/model/row-reuse/index.js';
import { trunkGoldensFile, type TrunkGoldens } from '../../../tools/trunks/goldens.js';
import {
  ensureTrunkReplicas,
  hasTorch,
  TRUNK_FAMILIES,
  TRUNK_KINDS,
  type TrunkFamily,
  type TrunkKind,
} from '../../../tools/trunks/replicas.js';
import { deciderRequest } from '../decider-helpers.js';
import * as golden from '../golden-helpers.js';
import { apart, loadReader, openReuse, padIdOf, reuseRows, rowOutputs, testCache, wholeRows } from './reuse-helpers.js';

const torch = hasTorch('row reuse on the real-trunk replicas');
const CASES = TRUNK_FAMILIES.flatMap((family) => TRUNK_KINDS.map((trunk) => [family, trunk] as const));

/** A golden answer's numbers as the family's probabilities give them (noul: [P(yes), P(no)]). */
function wanted(family: TrunkFamily, r: golden.ReadoutNumbers, type: string): number[] {
  return type === 'noul' && family !== 'decider-slots' ? [r.noul!, 1 - r.noul!] : r.probabilities;
}

describe.skipIf(!torch)('the state read once on the real-trunk replicas', () => {
  let dirs: string[] = [];
  const cacheDir = testCache();
  beforeAll(async () => {
    dirs = await ensureTrunkReplicas(CASES.map(([family, trunk]) => ({ family, trunk })));
  }, 600_000);

  describe.each(CASES.map(([f, t], i) => [f, t, i] as const))('%s on the %s trunk', (family, trunk, i) => {
    let rows: RowReader<CausalPlan>;
    let exported: ort.InferenceSession;
    let reuse: RowReuse;
    const goldens = golden.readGoldens<TrunkGoldens>(trunkGoldensFile(family));
    beforeAll(async () => {
      rows = loadReader(family, dirs[i]!);
      exported = await ort.InferenceSession.create(join(dirs[i]!, 'model.onnx'), { intraOpNumThreads: 1 });
      ({ reuse } = await openReuse(dirs[i]!, cacheDir));
    }, 120_000);
    afterAll(async () => {
      await exported?.release();
      await reuse?.close();
    });

    it('answers every golden from a snapshot: whole rows’ outputs within 1e-5 · (1 + max |y|), the references’ answers within 1e-5', async () => {
      let worstRows = 0;
      let worstAlone = 0;
      let worstAnswer = 0;
      const leftovers = new Set<number>();
      let longest = 0;
      for (const [n, g] of goldens.requests.entries()) {
        const plan = rows.plan(deciderRequest(g as never));
        const laid = reuseRows(plan);
        const whole = await wholeRows(exported, laid, padIdOf(dirs[i]!), reuse.facts.positions);
        const P = snapshotLength(laid);
        const snapshot = await reuse.snapshot(laid[0]!.ids.slice(0, P));
        expect(snapshot.length).toBe(P);
        const outputs = rowOutputs((await reuse.runRows(laid, snapshot))[reuse.facts.outputs[0]!]!, laid);
        const { worst, scale } = apart(whole, outputs);
        expect(worst, `${g.name}: from the snapshot vs whole rows`).toBeLessThan(1e-5 * (1 + scale));
        worstRows = Math.max(worstRows, worst / (1 + scale));
        // each row alone (B = 1) as among the others (B > 1)
        for (const [j, row] of laid.entries()) {
          const alone = rowOutputs((await reuse.runRows([row], snapshot))[reuse.facts.outputs[0]!]!, [row]);
          worstAlone = Math.max(worstAlone, apart(alone, [outputs[j]!]).worst);
        }
        const shared = laid.reduce((s, r) => Math.min(s, commonPrefix(r.ids, laid[0]!.ids)), laid[0]!.ids.length);
        leftovers.add(Math.min(shared, ...laid.flatMap((r) => Object.values(r.positions).flat())) - P);
        longest = Math.max(longest, P);
        const ref = goldens.results[trunk as TrunkKind][n]!;
        for (const q of plan.questions) {
          const got = rows.probabilities(
            q,
            q.rows.map((r) => outputs[r]!),
          );
          const want = wanted(family, ref.answers[q.key]!, q.question.type);
          expect(got, `${g.name} ${q.key}`).toHaveLength(want.length);
          got.forEach((p, j) => (worstAnswer = Math.max(worstAnswer, Math.abs(p - want[j]!))));
        }
      }
      console.info(
        `${family}-${trunk}: from snapshots (P up to ${longest}, the state past P ${[...leftovers].sort((a, b) => a - b).join(', ')}): ` +
          `outputs vs whole rows ${worstRows.toExponential(2)} (relative), alone vs batched ${worstAlone.toExponential(2)}, answers vs goldens ${worstAnswer.toExponential(2)}`,
      );
      expect(worstAlone).toBeLessThan(1e-5);
      expect(worstAnswer).toBeLessThan(1e-5);
    }, 300_000);
  });
});

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

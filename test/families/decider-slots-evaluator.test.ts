// The decider as exported with a slot head (`decider-slots`: families/decider-slots/ behind
// families/evaluator.ts), against the independent references on every golden request
// (test/families/decider-slots/goldens.json, made by tools/families/decider-slots/goldens.ts):
// - the rows the family builds (context + piece) and their slot positions equal
//   tools/families/decider/decider_layout.py's on every golden request, the state cut is reported where it
//   cuts, and the requests it refuses are refused (a 422 BudgetError, also across the engine thread);
// - the replica's label logits (tools/families/decider-slots/replica.ts: BF16 weights in external
//   data, a causal graph without an attention mask), rows of several questions and requests run in
//   padded batches, equal the numpy forward (tools/families/decider-slots/decider_slots_forward.py, float64) of
//   each row alone and unpadded within 1e-4 on all 255 labels: fp32 against float64 over ≤ 3,072
//   causal keys, logits of O(10) (a dot product of 32 O(1) terms) carry ~1e-6 of rounding, while a
//   wrong slot, a wrong label row or a padded key that leaks moves them by O(1);
// - batched label logits equal each row run alone (another padded length) within 1e-5;
// - the evaluator's answers equal the reference readout of the numpy logits ([T, 1, T], the isolated
//   score rule) within 1e-5: the logits' 1e-4 bound divided by T ≈ 1 moves a probability by at most
//   ~2.5e-5 in the worst case, and by ~1e-6 at the measured logit error;
// - no caller text becomes an added token: every row of every golden plan holds only ordinary ids.
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { DeciderRefusal } from '../../src/engine/families/decider/index.js';
import { SlotRowTooLong } from '../../src/engine/families/decider-slots/rows.js';
import type { WholeRow } from '../../src/engine/families/causal/plan.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import { rowBatches } from '../../src/engine/families/rows/batched.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import type { Answer } from '../../src/engine/types.js';
import type { GoldenRequest } from '../../tools/families/decider/goldens.js';
import { ensureSlotsReplica, SLOTS_REPLICA_SHAPE } from '../../tools/families/decider-slots/replica.js';
import { SLOTS_GOLDENS } from '../../tools/families/decider-slots/goldens.js';
import { QWEN35_FIRST_ADDED } from '../../tools/families/kit/qwen35-tokenizer.js';
import { deciderRequest } from './decider-helpers.js';
import { expectCrossesAsBudgetError, readGoldens, thrownBy } from './golden-helpers.js';
import { graphIo } from './replica-helpers.js';
import { openCausal, wholeRowsOf } from './row-family.js';

interface SlotResult {
  name: string;
  refused?: string;
  row_tokens?: number;
  ctx?: number[];
  cut?: boolean;
  rows?: Array<{ key: string; level?: number; piece: number[]; slot: number; labels: number[] }>;
  probabilities?: Record<string, number[]>;
}
const goldens = readGoldens<{ requests: GoldenRequest[]; results: SlotResult[] }>(SLOTS_GOLDENS);
const cases = goldens.requests.map((g, i) => [g, goldens.results[i]!] as const);
const read = cases.filter(([g]) => g.label_logits !== undefined);

const replica = ensureSlotsReplica();
let family: Awaited<ReturnType<typeof openCausal>>;
let evaluator: Evaluator;
beforeAll(async () => {
  family = await openCausal('decider-slots', replica);
  evaluator = await loadEvaluator({ modelDir: replica, threads: 1, engineThread: false, rowBatchTokens: 16_384 });
}, 120_000);
afterAll(async () => {
  await family.close();
  await evaluator.close();
});

describe('the slot-head replica folder, as published', () => {
  it('is detected as decider-slots by its decision.json layout id', () => {
    expect(detectFamily(replica)).toBe('decider-slots');
  });

  it('is a causal graph without an attention mask, its matrices BF16 in external data cast to fp32', () => {
    const io = graphIo(join(replica, 'model.onnx'));
    expect(io.inputs).toEqual(['input_ids:7[rows,seq]', 'slot_pos:7[rows]']);
    expect(io.outputs).toEqual(['label_logits:1[rows,255]']);
    expect(io.external).toEqual(['model.onnx_data']);
    expect(io.ops.has('Cast')).toBe(true);
    expect(existsSync(join(replica, 'model.onnx_data'))).toBe(true);
  });

  it('reads the label table, the temperatures, the pad and the row limit from the folder and says so', () => {
    const notes = family.notes.join('\n');
    expect(notes).toMatch(/255 labels from decision\.json/);
    expect(notes).toMatch(/temperature \[1\.03, 1, 1\.03\] from calibration\.json/);
    expect(notes).toMatch(/pad 248044, rows of at most 36864 tokens/);
  });
});

describe('a folder with only the layout id in decision.json and no calibration.json', () => {
  it('computes the same label table from the tokenizer, pads with <|endoftext|>, reads with temperature 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'decider-slots-'));
    try {
      for (const f of ['model.onnx', 'model.onnx_data', 'tokenizer.json', 'tokenizer_config.json'])
        symlinkSync(join(replica, f), join(dir, f));
      writeFileSync(join(dir, 'decision.json'), JSON.stringify({ layout: 'decider-slots-v1' }));
      const bare = await openCausal('decider-slots', dir);
      try {
        const notes = bare.notes.join('\n');
        expect(notes).toMatch(/255 labels computed from the tokenizer/);
        expect(notes).toMatch(/no calibration\.json: temperature \[1, 1, 1\]/);
        expect(notes).toMatch(/pad 248044$/m);
        const [g] = cases.find(([c]) => c.name === 'choice 40 options')!;
        const request = deciderRequest(g);
        const [want, got] = [family.plan(request), bare.plan(request)];
        expect(got).toEqual(want);
        const [a, b] = [await family.run(wholeRowsOf(want)), await bare.run(wholeRowsOf(got))];
        expect(b).toEqual(a);
        // Temperature 1 instead of 1.03: the same logits read less sharply by the folder that has it.
        const q = want.questions[0]!;
        const sharp = Math.max(...bare.probabilities(q, b));
        expect(sharp).toBeGreaterThan(Math.max(...family.probabilities(q, a)));
      } finally {
        await bare.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the layout, on every golden request', () => {
  it('builds the reference rows and slots, cuts the state where it does, refuses what it refuses', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    let refused = 0;
    let cut = 0;
    for (const [g, ref] of cases) {
      const request = deciderRequest(g);
      if (ref.refused) {
        const thrown = thrownBy(() => family.plan(request));
        if (ref.row_tokens !== undefined) {
          expect(thrown, g.name).toBeInstanceOf(SlotRowTooLong);
          expect((thrown as SlotRowTooLong).count, g.name).toBe(ref.row_tokens);
          expect((thrown as SlotRowTooLong).limit, g.name).toBe(SLOTS_REPLICA_SHAPE.positions);
        } else expect(thrown, g.name).toBeInstanceOf(DeciderRefusal);
        expectCrossesAsBudgetError(thrown);
        refused++;
        continue;
      }
      const plan = family.plan(request);
      expect(
        wholeRowsOf(plan).map((r) => [r.ids, r.at.slot_pos]),
        g.name,
      ).toEqual(ref.rows!.map((r) => [[...ref.ctx!, ...r.piece], r.slot]));
      // The state's part: the context, the same in every row.
      expect(plan.state, g.name).toEqual(ref.ctx);
      const keys = plan.questions.flatMap((q) => q.rows.map(() => q.key));
      expect(keys, g.name).toEqual(ref.rows!.map((r) => r.key));
      for (const q of plan.questions) expect(q.truncated, g.name).toEqual(ref.cut ? ['state'] : undefined);
      expect(family.usage(plan).usage.input_tokens).toBe(plan.rows.reduce((n, r) => n + r.tokens, 0));
      // Content is data: no caller text became an added token.
      for (const r of wholeRowsOf(plan)) expect(Math.max(...r.ids), g.name).toBeLessThan(QWEN35_FIRST_ADDED);
      if (ref.cut) cut++;
    }
    expect(refused).toBe(9);
    expect(cut).toBe(2);
  });
});

describe('the replica run through the family and the engine', () => {
  const rows: Array<WholeRow & { tokens: number }> = [];
  const want: number[][] = [];
  let got: number[][] = [];
  beforeAll(async () => {
    for (const [g, ref] of read)
      ref.rows!.forEach((r, j) => {
        const ids = [...ref.ctx!, ...r.piece];
        rows.push({ tokens: ids.length, ids, at: { slot_pos: r.slot } });
        want.push(g.label_logits![j]!);
      });
    got = new Array<number[]>(rows.length);
    for (const batch of rowBatches(rows, 16_384)) {
      const out = await family.run(batch.map((i) => rows[i]!));
      batch.forEach((i, j) => (got[i] = out[j]!.logits));
    }
  }, 300_000);

  it('gives the numpy label logits of each row alone and unpadded on all 255 labels (within 1e-4)', () => {
    expect(read.length).toBeGreaterThanOrEqual(100);
    expect(Math.max(...rows.map((r) => r.tokens))).toBeGreaterThan(2_048);
    let worst = 0;
    want.forEach((row, i) => {
      expect(got[i]).toHaveLength(255);
      row.forEach((x, j) => (worst = Math.max(worst, Math.abs(got[i]![j]! - x))));
    });
    console.info(`decider-slots: ${rows.length} rows, worst |Δ label logit| to numpy ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-4);
  });

  it('gives each row alone what it gave in its batch (within 1e-5)', async () => {
    let worst = 0;
    const picked = rows.map((_, i) => i).filter((i) => i % 7 === 0);
    for (const i of picked) {
      const [alone] = await family.run([rows[i]!]);
      alone!.logits.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - got[i]![j]!))));
    }
    console.info(`decider-slots: ${picked.length} rows alone against batched, worst |Δ| ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  });

  it("answers as the reference readout of the numpy logits (within 1e-5), refuses the reference's refusals", async () => {
    let worst = 0;
    for (const [g, ref] of read) {
      const result = await evaluator.evaluate(deciderRequest(g));
      expect(result.usage.input_tokens, g.name).toBe(
        ref.rows!.reduce((n, r) => n + ref.ctx!.length + r.piece.length, 0),
      );
      for (const [key, q] of g.questions) {
        const a = result.answers[key] as Answer;
        const p = ref.probabilities![key]!;
        const numbers =
          a.type === 'noul'
            ? [a.noul, 1 - a.noul]
            : (q.type === 'choice'
                ? (q.criteria as Array<[string, unknown]>).map(([n]) => n)
                : p.map((_, j) => String(j))
              ).map((k) => a.probabilities[k]!);
        expect(numbers, `${g.name} ${key}`).toHaveLength(p.length);
        numbers.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - p[j]!))));
      }
    }
    console.info(
      `decider-slots: ${read.length} requests answered, worst |Δ p| to the reference ${worst.toExponential(2)}`,
    );
    expect(worst).toBeLessThan(1e-5);
    for (const [g] of cases.filter(([, r]) => r.refused))
      await expect(evaluator.evaluate(deciderRequest(g)), g.name).rejects.toBeInstanceOf(BudgetError);
  }, 300_000);
});

// The state read once, as the engine serves a causal-row family (families/causal/reuse.ts over
// model/row-reuse/): Kev on the Qwen3 real-trunk replica, loaded by the family loader. Across
// requests a tenant's state comes from the model's prefix cache, never another tenant's; the cache's
// bytes are the model's stats (what assay ps and the memory budget count) and go when it closes;
// usage counts the state's snapshot once, so a request whose whole rows pass the token budget is
// answered; answers from the cache equal answers computed afresh. A graph the rewrite cannot read
// (the toy Kev replica: learned positions) or a load with the rewrite off runs whole rows, and its
// load note, stats (/metrics' prefix_reuse) and `assay models` say so. The goldens through reuse on
// every trunk: trunks/trunk-helpers.ts; bit for bit against whole rows: trunks/reuse.test.ts.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { familyNamed, loadEvaluator, type EngineNote, type Evaluator } from '../../src/engine/index.js';
import { BudgetError } from '../../src/engine/errors.js';
import { ensureKevReplica } from '../../tools/families/kev/replica.js';
import { trunkGoldensFile, type TrunkGoldens } from '../../tools/trunks/goldens.js';
import { ensureTrunkReplicas, hasTorch } from '../../tools/trunks/replicas.js';
import { deciderRequest } from './decider-helpers.js';
import * as golden from './golden-helpers.js';

// `assay models` reads the default graph cache folders: this file's own
process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'assay-reuse-cache-'));

const torch = hasTorch('the state read once, served');
const goldens = golden.readGoldens<TrunkGoldens>(trunkGoldensFile('kev'));
/** Six questions on one state of ~230 tokens: whole rows 1,545 tokens, the state read once ~600. */
const SIX = deciderRequest(goldens.requests[3] as never);
const FOUR = deciderRequest(goldens.requests[1] as never);

/** Every number of the answers, in order (probabilities, noul, confidence). */
const numbers = (x: unknown): number[] =>
  typeof x === 'number' ? [x] : x && typeof x === 'object' ? Object.values(x).flatMap(numbers) : [];

async function load(dir: string, extra: Record<string, unknown> = {}): Promise<{ e: Evaluator; notes: EngineNote[] }> {
  const notes: EngineNote[] = [];
  const e = await loadEvaluator({
    modelDir: dir,
    threads: 1,
    engineThread: false,
    onNote: (n) => notes.push(n),
    ...extra,
  });
  return { e, notes };
}

describe.skipIf(!torch)('a causal-row family reads its state once', () => {
  let dir: string;
  let reused: Evaluator;
  let notes: EngineNote[];
  beforeAll(async () => {
    dir = (await ensureTrunkReplicas([{ family: 'kev', trunk: 'qwen3' }]))[0]!;
    ({ e: reused, notes } = await load(dir!, { requestTokenBudget: 1000 }));
  }, 600_000);
  afterAll(() => reused?.close());

  it('says so at load, in its stats and in assay models', () => {
    expect(notes.filter((n) => n.kind === 'reuse')).toHaveLength(1);
    expect(notes.some((n) => n.kind === 'whole-rows')).toBe(false);
    expect(reused.stats().prefixReuse).toBe(true);
    expect(familyNamed('kev-pointer')!.describe!(dir)).toBe('the state read once');
  });

  it('a tenant reads its state from the cache, another tenant never does; its bytes are the model’s; usage counts the state once', async () => {
    const first = await reused.evaluate(FOUR, { cacheScope: 'tenant-a' });
    const one = reused.stats();
    expect([one.prefixCacheHits, one.prefixCacheMisses]).toEqual([0, 1]);
    // a ~330-token state: a 320-token snapshot of 2 layers' K and V in float32, stored
    expect(one.prefixCacheBytes).toBeGreaterThan(0);
    const again = await reused.evaluate(FOUR, { cacheScope: 'tenant-a' });
    expect(reused.stats().prefixCacheHits).toBe(1);
    expect(again.answers).toEqual(first.answers);
    const other = await reused.evaluate(FOUR, { cacheScope: 'tenant-b' });
    const three = reused.stats();
    expect([three.prefixCacheHits, three.prefixCacheMisses]).toEqual([1, 2]);
    expect(three.prefixCacheBytes).toBe(2 * one.prefixCacheBytes);
    expect(other.answers).toEqual(first.answers);
    // usage: the snapshot once, each question's tokens past it, the same on a hit
    const parts = first.usageParts!;
    expect(parts.shared.input_tokens).toBe(320);
    expect(first.usage.input_tokens).toBe(320 + Object.values(parts.questions).reduce((n, u) => n + u.input_tokens, 0));
    expect(again.usage).toEqual(first.usage);
  });

  it('the token budget counts what runs: six questions whose whole rows pass it are answered', async () => {
    const result = await reused.evaluate(SIX);
    const whole = goldens.results.qwen3[3]!.rows.reduce((n, r) => n + r.tokens, 0);
    expect(whole).toBeGreaterThan(1000);
    expect(result.usage.input_tokens).toBeLessThanOrEqual(1000);
    // whole rows: six questions need 1,545 tokens, four 1,378
    const { e: off, notes: offNotes } = await load(dir, { requestTokenBudget: 1400, rewriteGraph: false });
    try {
      expect(offNotes.find((n) => n.kind === 'whole-rows')?.message).toMatch(/graph rewrite is off/);
      expect(off.stats().prefixReuse).toBe(false);
      await expect(off.evaluate(SIX)).rejects.toBeInstanceOf(BudgetError);
      // the same answers read whole (the bound of the goldens: fp32 rounding)
      const whole4 = await off.evaluate(FOUR);
      const reused4 = await reused.evaluate(FOUR);
      const got = numbers(reused4.answers);
      numbers(whole4.answers).forEach((x, i) => expect(Math.abs(x - got[i]!)).toBeLessThan(1e-5));
    } finally {
      await off.close();
    }
  });

  it('drops its snapshots when the model closes', async () => {
    const { e } = await load(dir);
    await e.evaluate(FOUR);
    expect(e.stats().prefixCacheBytes).toBeGreaterThan(0);
    await e.close();
    expect(e.stats().prefixCacheBytes).toBe(0);
  });
});

describe('a graph the rewrite cannot read runs whole rows and says so', () => {
  it('the toy Kev replica (learned positions): a whole-rows note with the reason, no prefix reuse, assay models says why', async () => {
    const toy = ensureKevReplica();
    const { e, notes } = await load(toy);
    try {
      const note = notes.find((n) => n.kind === 'whole-rows');
      expect(note?.message).toMatch(/whole rows/);
      expect(notes.some((n) => n.kind === 'reuse')).toBe(false);
      expect(e.stats().prefixReuse).toBe(false);
      expect(familyNamed('kev-pointer')!.describe!(toy)).toMatch(/^whole rows: /);
      // every row whole: the state counted in each
      const result = await e.evaluate(FOUR);
      expect(result.usageParts?.shared.input_tokens ?? 0).toBe(0);
      expect(e.stats().prefixCacheBytes).toBe(0);
    } finally {
      await e.close();
    }
  });
});

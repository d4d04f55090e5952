// A state's snapshot across requests (src/engine/model/row-reuse/snapshots.ts), on the Qwen3 Kev
// replica's continuation graph: kept in the model's prefix cache under the caller's scope and the
// model, keyed by the state's tokens (never a question's), its bytes counted, least recently used
// out first within the byte budget; one question on a new state runs whole until the state is seen
// again. Rows from a cached snapshot give what whole rows give.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrefixCache } from '../../../src/engine/cache/prefix-cache.js';
import {
  readState,
  snapshotScope,
  type ReuseRow,
  type RowReuse,
  type Snapshot,
  type StateRead,
  type StateRows,
} from '../../../src/engine/model/row-reuse/index.js';
import { openReuse, testCache } from './reuse-helpers.js';

const DIR = join(import.meta.dirname, '../../../models/generated/trunks/kev-qwen3');

let reuse: RowReuse;
beforeAll(async () => {
  ({ reuse } = await openReuse(DIR, testCache(), { check: false }));
});
afterAll(() => reuse?.close());

const token = (i: number) => (i * 7919 + 17) % 200;
const stateOf = (n: number, seed = 0) => Array.from({ length: n }, (_, i) => token(i + seed));

/** Rows on `state`: each question `tail` tokens of its own, the head's positions after the state. */
function request(state: number[], tails: number[], seed = 0): StateRows {
  const rows = tails.map((tail, q) => {
    const ids = [...state, ...Array.from({ length: tail }, (_, i) => token(5000 + 131 * (q + seed) + i))];
    const last = ids.length - 1;
    const positions = Object.fromEntries(
      reuse.facts.positions.map((p) => [p.name, p.rank === 1 ? last : [state.length, last]]),
    );
    return { ids, positions };
  });
  return { rows, stateLength: state.length };
}

const snapshotOf = (read: StateRead): Snapshot => {
  if (read.whole) throw new Error(`whole rows (${read.reason})`);
  return read.snapshot;
};
const rel = (a: Float32Array, b: Float32Array) =>
  a.reduce((worst, x, i) => Math.max(worst, Math.abs(x - b[i]!)), 0) / (1 + Math.max(...a.map(Math.abs)));
const first = (out: Record<string, { data: unknown }>) => out[reuse.facts.outputs[0]!]!.data as Float32Array;

describe('state snapshots across requests', () => {
  it('a tenant reads its state from the cache; another tenant with the same state never gets it', async () => {
    const cache = new PrefixCache<Snapshot>(64 * 2 ** 20);
    const a = { cache, scope: snapshotScope('kev', 'tenant-a') };
    const b = { cache, scope: snapshotScope('kev', 'tenant-b') };
    const state = stateOf(150);
    const taken = await readState(reuse, request(state, [5, 9]), a);
    expect(taken).toMatchObject({ whole: false, hit: false, stored: true });
    expect(snapshotOf(taken).length).toBe(128);
    expect(cache.bytes).toBe(snapshotOf(taken).bytes);

    const other = await readState(reuse, request(state, [5, 9]), b);
    expect(other).toMatchObject({ whole: false, hit: false, stored: true });
    expect(snapshotOf(other)).not.toBe(snapshotOf(taken));
    expect(cache.size).toBe(2);

    // the same state, other questions (sharing more than the state: the key stays the state's)
    const again = request(state, [20, 20], 7);
    const [one, two] = again.rows as [ReuseRow, ReuseRow];
    again.rows = [one, { ...two, ids: [...one.ids.slice(0, state.length + 10), ...two.ids.slice(state.length + 10)] }];
    const hit = await readState(reuse, again, a);
    expect(hit).toMatchObject({ whole: false, hit: true });
    expect(snapshotOf(hit)).toBe(snapshotOf(taken));
    expect(cache.hits).toBe(1);
    // rows from the cached snapshot answer as whole rows do (fp32 rounding: 1e-5 relative)
    expect(
      rel(first(await reuse.runRows(again.rows)), first(await reuse.runRows(again.rows, snapshotOf(hit)))),
    ).toBeLessThan(1e-5);

    // one model's snapshots are not another's
    expect(
      await readState(reuse, request(state, [5, 9]), { cache, scope: snapshotScope('kev-2', 'tenant-a') }),
    ).toMatchObject({
      hit: false,
    });
  });

  it('one question on a new state runs whole; the state is kept on its second sighting and read from the cache on its third', async () => {
    const cache = new PrefixCache<Snapshot>(64 * 2 ** 20);
    const shared = { cache, scope: snapshotScope('kev', undefined) };
    const state = stateOf(100, 3);
    expect(await readState(reuse, request(state, [6]), shared)).toEqual({ whole: true, reason: 'one row' });
    expect(cache.size).toBe(0);
    expect(await readState(reuse, request(state, [8], 1), shared)).toMatchObject({
      whole: false,
      hit: false,
      stored: true,
    });
    expect(await readState(reuse, request(state, [4], 2), shared)).toMatchObject({ whole: false, hit: true });
    // a state under one piece (64 tokens) shares nothing
    expect(await readState(reuse, request(stateOf(63), [6, 7]), shared)).toEqual({
      whole: true,
      reason: 'no shared state',
    });
  });

  it('counts its bytes and keeps the least recently used out within its budget; estimates a snapshot before taking it', async () => {
    const probe = await reuse.snapshot(stateOf(64, 11));
    const perPiece = probe.bytes;
    expect(reuse.snapshotBytes(64)).toBe(perPiece);
    const long = await reuse.snapshot(stateOf(192, 11));
    expect(reuse.snapshotBytes(192)).toBe(long.bytes);

    // room for two 128-token snapshots, not three
    const cache = new PrefixCache<Snapshot>(Math.floor(2.5 * reuse.snapshotBytes(128)!));
    const shared = { cache, scope: snapshotScope('kev', 't') };
    const states = [stateOf(130, 20), stateOf(130, 40), stateOf(130, 60)];
    await readState(reuse, request(states[0]!, [3, 4]), shared);
    await readState(reuse, request(states[1]!, [3, 4]), shared);
    expect(await readState(reuse, request(states[0]!, [5, 6]), shared)).toMatchObject({ hit: true }); // 0 now the most recent
    await readState(reuse, request(states[2]!, [3, 4]), shared); // evicts 1
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBe(2 * reuse.snapshotBytes(128)!);
    expect(await readState(reuse, request(states[0]!, [7, 8]), shared)).toMatchObject({ hit: true });
    expect(await readState(reuse, request(states[1]!, [7, 8]), shared)).toMatchObject({ hit: false });

    // a cache that keeps nothing (size 0) still reads the state once per request
    const off = { cache: new PrefixCache<Snapshot>(0), scope: 't' };
    expect(await readState(reuse, request(states[0]!, [3, 4]), off)).toMatchObject({ whole: false, stored: false });
    expect(off.cache.size).toBe(0);
  });
});

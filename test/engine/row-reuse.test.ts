// Where a request's rows share a snapshot (src/engine/model/row-reuse/prefix.ts): the longest token
// prefix of all rows, floored to a multiple of 64 (a state pass runs whole chunks, never a pad), and
// never past a position the head gathers (each row's positions must be read in its own pass).
import { describe, expect, it } from 'vitest';
import { snapshotLength, type ReuseRow } from '../../src/engine/model/row-reuse/index.js';

const row = (ids: number[], positions: ReuseRow['positions'] = { at: ids.length - 1 }): ReuseRow => ({
  ids,
  positions,
});
const count = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

describe('snapshotLength', () => {
  it('is the rows’ common prefix floored to a multiple of 64', () => {
    const state = count(200);
    expect(snapshotLength([row([...state, 1, 2]), row([...state, 3])])).toBe(192);
    expect(snapshotLength([row([...count(256), 1]), row([...count(256), 2])])).toBe(256);
    expect(snapshotLength([row([...count(255), 1]), row([...count(255), 2])])).toBe(192);
  });

  it('is 0 for a state under 64 tokens, for rows that differ early, and for no rows', () => {
    expect(snapshotLength([row([...count(63), 1]), row([...count(63), 2])])).toBe(0);
    expect(snapshotLength([row([5, ...count(300)]), row([6, ...count(300)])])).toBe(0);
    expect(snapshotLength([])).toBe(0);
  });

  it('never passes a gathered position of any row (one per row, or a list)', () => {
    const state = count(300);
    const a = row([...state, 1, 2], { decide: 301, opts: [301, 130] });
    const b = row([...state, 3], { decide: 300, opts: [300] });
    expect(snapshotLength([a, b])).toBe(128);
    expect(snapshotLength([row([...state, 1], { at: 70 }), row([...state, 2])])).toBe(64);
  });

  it('takes a row alone up to its first gathered position (and leaves it at least one token)', () => {
    expect(snapshotLength([row(count(500))])).toBe(448);
    expect(snapshotLength([row(count(512))])).toBe(448);
    expect(snapshotLength([row(count(513))])).toBe(512);
  });

  it('a question asked twice shares its whole row up to the positions', () => {
    const r = row(count(400));
    expect(snapshotLength([r, r])).toBe(384);
  });

  it('takes another multiple when asked', () => {
    expect(snapshotLength([row([...count(100), 1]), row([...count(100), 2])], 1)).toBe(100);
  });
});

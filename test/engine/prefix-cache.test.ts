// The cross-request prefix cache on its own: LRU within a byte budget, keys, and the admission of
// one-question prefixes on their second sighting (the evaluator's side: single-question-reuse.test.ts).
import { describe, expect, it } from 'vitest';
import { PrefixCache } from '../../src/engine/cache/prefix-cache.js';
import type { KvCache } from '../../src/engine/model/runner.js';

describe('prefix cache', () => {
  const kv = (bytes: number): KvCache => ({ tensors: new Map(), length: 1, bytes });

  it('evicts the least recently used entries to stay within its byte budget', () => {
    const c = new PrefixCache(300);
    c.store('m', [1], kv(100));
    c.store('m', [2], kv(100));
    c.store('m', [3], kv(100));
    expect(c.lookup('m', [1])).toBeDefined(); // 1 is now the most recent
    c.store('m', [4], kv(100)); // evicts 2
    expect(c.lookup('m', [2])).toBeUndefined();
    expect(c.lookup('m', [1])).toBeDefined();
    expect(c.lookup('m', [3])).toBeDefined();
    expect(c.bytes).toBe(300);
    expect(c.hits).toBe(3);
    expect(c.misses).toBe(1);
  });

  it('keys on the scope and the exact tokens; size 0 keeps nothing', () => {
    const c = new PrefixCache(1000);
    c.store('m', [1, 2], kv(10));
    expect(c.lookup('other', [1, 2])).toBeUndefined();
    expect(c.lookup('m', [1, 2, 3])).toBeUndefined();
    expect(c.lookup('m', [12])).toBeUndefined();
    const off = new PrefixCache(0);
    off.store('m', [1], kv(1));
    expect(off.lookup('m', [1])).toBeUndefined();
    expect(off.size).toBe(0);
    const tooBig = new PrefixCache(5);
    tooBig.store('m', [1], kv(10));
    expect(tooBig.size).toBe(0);
  });
});

describe('prefix cache admission (one question per request)', () => {
  it('admits a prefix on its second sighting; asking does not count as a sighting', () => {
    const c = new PrefixCache(1000);
    expect(c.admits('m', [1, 2], 10)).toBe(false);
    expect(c.admits('m', [1, 2], 10)).toBe(false); // asked again: still never seen
    c.recordSighting('m', [1, 2], 10);
    expect(c.admits('m', [1, 2], 10)).toBe(true);
    expect(c.admits('m', [1, 2], 10)).toBe(true); // asking twice changes nothing
    // The second sighting is recorded as its request stores the prefix: the next miss starts over.
    c.recordSighting('m', [1, 2], 10);
    expect(c.admits('m', [1, 2], 10)).toBe(false);
  });

  it('a sighting counts for its own scope and exact tokens only', () => {
    const c = new PrefixCache(1000);
    c.recordSighting('tenant-a', [1, 2], 10);
    expect(c.admits('tenant-b', [1, 2], 10)).toBe(false);
    expect(c.admits('tenant-a', [1, 2, 3], 10)).toBe(false);
    expect(c.admits('tenant-a', [1, 2], 10)).toBe(true);
  });

  it('remembers nothing when it would keep nothing: cache off, or an entry too large', () => {
    const off = new PrefixCache(0);
    off.recordSighting('m', [1], 1);
    off.recordSighting('m', [1], 1);
    expect(off.admits('m', [1], 1)).toBe(false);
    const small = new PrefixCache(5);
    small.recordSighting('m', [1], 10);
    expect(small.admits('m', [1], 1)).toBe(false); // the too-large sighting was not remembered
    expect(small.admits('m', [1], 10)).toBe(false);
  });

  it('remembers the last 1,024 sightings: an older one is forgotten', () => {
    const c = new PrefixCache(1000);
    for (let i = 0; i <= 1024; i++) c.recordSighting('m', [i], 10);
    expect(c.admits('m', [0], 10)).toBe(false);
    expect(c.admits('m', [1], 10)).toBe(true);
    expect(c.admits('m', [1024], 10)).toBe(true);
  });
});

// Cross-request prefix cache: an LRU of what a prefix computed (a decoder's prefix KV caches, a
// causal-row family's state snapshots: model/row-reuse/), keyed by a SHA-256 digest of the scope
// (the model and the caller's cache scope: a tenant never hits another's entry) and the exact
// prefix tokens, bounded in bytes. Size 0 keeps nothing (zero-retention deployments). Each loaded
// model has its own, cleared when the model closes.
//
// Admission for one-question requests: storing a prefix costs such a request a pass (prefix, then
// question, instead of one pass over both), so a prefix is stored on its second sighting: the cache
// remembers a hash (never the tokens) of the last SIGHTINGS prefixes it did not store, under the same
// scope as the cache, so a repeated state hits from its third request on and a one-off request keeps
// the single pass.
import { createHash } from 'node:crypto';
import type { KvCache } from '../model/runner.js';

/** Prefixes remembered (as 32-byte digests) for admission: about 100 KB. */
const SIGHTINGS = 1024;

/** What the cache holds for a prefix: anything that counts its bytes. */
export interface Cached {
  readonly bytes: number;
}

export class PrefixCache<T extends Cached = KvCache> {
  private readonly entries = new Map<string, T>();
  /** Keys (digests) of prefixes seen once and not stored, oldest first. */
  private readonly sightings = new Set<string>();
  private usedBytes = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly capacityBytes: number) {}

  get bytes(): number {
    return this.usedBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Whether an entry of this many bytes would be kept (the cache is on and it fits). */
  keeps(bytes: number): boolean {
    return this.capacityBytes > 0 && bytes <= this.capacityBytes;
  }

  /**
   * Whether a prefix that missed should be stored although storing costs its request a pass: yes on
   * its second sighting among the last SIGHTINGS (and when an entry of `bytes` is kept at all). Only
   * asks: recordSighting remembers the sighting.
   */
  admits(scope: string, tokens: readonly number[], bytes: number): boolean {
    return this.keeps(bytes) && this.sightings.has(keyOf(scope, tokens));
  }

  /**
   * Records a sighting of a prefix that missed (when an entry of `bytes` is kept at all): a first one
   * is remembered, the oldest of SIGHTINGS forgotten; a second one is forgotten, as admits() said yes
   * to it and its request stores it.
   */
  recordSighting(scope: string, tokens: readonly number[], bytes: number): void {
    if (!this.keeps(bytes)) return;
    const key = keyOf(scope, tokens);
    if (this.sightings.delete(key)) return;
    this.sightings.add(key);
    if (this.sightings.size > SIGHTINGS) this.sightings.delete(this.sightings.values().next().value!);
  }

  lookup(scope: string, tokens: readonly number[]): T | undefined {
    if (this.capacityBytes <= 0) return undefined;
    const key = keyOf(scope, tokens);
    const kv = this.entries.get(key);
    if (!kv) {
      this.misses++;
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, kv); // most recently used last
    this.hits++;
    return kv;
  }

  store(scope: string, tokens: readonly number[], kv: T): void {
    if (kv.bytes > this.capacityBytes) return;
    const key = keyOf(scope, tokens);
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.usedBytes -= old.bytes;
    }
    while (this.usedBytes + kv.bytes > this.capacityBytes) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, T];
      this.entries.delete(oldestKey);
      this.usedBytes -= oldest.bytes;
    }
    this.entries.set(key, kv);
    this.usedBytes += kv.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.sightings.clear();
    this.usedBytes = 0;
  }
}

/**
 * The key of a prefix: a digest of its scope (what may share the entry: one model, one caller's
 * cache scope) and the token ids, never the tokens themselves.
 */
function keyOf(scope: string, tokens: readonly number[]): string {
  return createHash('sha256')
    .update(scope)
    .update('\u0000')
    .update(new Uint8Array(Uint32Array.from(tokens).buffer))
    .digest('base64');
}

// Cross-request prefix cache: an LRU of prefix KV caches, keyed by model and the exact prefix
// tokens, bounded in bytes. Size 0 keeps nothing (zero-retention deployments).
import type { KvCache } from './runner.js';

interface Entry {
  tokens: number[];
  kv: KvCache;
}

export class PrefixCache {
  private readonly entries = new Map<string, Entry>();
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

  lookup(model: string, tokens: number[]): KvCache | undefined {
    if (this.capacityBytes <= 0) return undefined;
    const key = keyOf(model, tokens);
    const entry = this.entries.get(key);
    if (!entry) {
      this.misses++;
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry); // most recently used last
    this.hits++;
    return entry.kv;
  }

  store(model: string, tokens: number[], kv: KvCache): void {
    if (kv.bytes > this.capacityBytes) return;
    const key = keyOf(model, tokens);
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.usedBytes -= old.kv.bytes;
    }
    while (this.usedBytes + kv.bytes > this.capacityBytes) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, Entry];
      this.entries.delete(oldestKey);
      this.usedBytes -= oldest.kv.bytes;
    }
    this.entries.set(key, { tokens, kv });
    this.usedBytes += kv.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.usedBytes = 0;
  }
}

function keyOf(model: string, tokens: number[]): string {
  return `${model}\u0000${tokens.join(',')}`;
}

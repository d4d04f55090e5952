// What a model takes in memory, as `assay ps`, /admin/models and the memory budget count it: what
// the process's resident set (RSS) grew by over its load (its weights, the rewritten graph, the
// engine thread; never less than its files), plus the most it grew over one of its requests that
// ran alone (onnxruntime's arenas: the working memory its passes keep), plus what its prefix cache
// holds now. Summed over the resident models and added to what the process holds without models,
// it is the process's RSS (test/service/model-size.test.ts holds it within 15% with two models).
//
// The prefix cache is counted as it is, not at its cap (--prefix-cache-bytes): the cap is what a
// model's cache may grow to, and counting it in full made two tiny models read 1,251 MiB while
// the process had grown by 742. Only the "too large" refusal still reserves the cap: a model that
// alone, with a full cache, would pass the budget is refused before it loads.

/** A loaded model's measurements (model-pool.ts's slot). */
export interface Measured {
  /** RSS growth over its load, bytes (never less than its files). */
  bytes: number;
  /** The most RSS grew over a request of its that ran alone, bytes. */
  workBytes: number;
}

/** A resident model's size now: its load, its passes' working memory, its prefix cache as it is. */
export function residentBytes(m: Measured, prefixCacheBytes: number): number {
  return m.bytes + m.workBytes + prefixCacheBytes;
}

/**
 * What a model about to load is budgeted: the most a load of its folder measured before (load and
 * working memory), else its files (its cache starts empty).
 */
export function expectedBytes(measuredBefore: number | undefined, fileBytes: number): number {
  return measuredBefore ?? fileBytes;
}

/**
 * Memory an unloaded model freed that the allocator kept (glibc keeps freed heap for reuse rather
 * than returning it to the system): the next load reuses it, and its RSS growth then shows only part
 * of that model (measured in the churn test: 43 MiB for a model whose first load grew RSS by 310).
 * Unloads add what they free; before a load, whatever RSS fell since the first of those unloads was
 * returned and is not kept; after the load, the kept memory it may have reused is added to its
 * growth: up to the most its folder measured before, or all of it without such a figure. It errs
 * high, as the budget does.
 */
export class KeptMemory {
  private kept = 0;
  private freed = 0;
  private rssAtUnload: number | undefined;

  /** A model of `bytes` unloaded while RSS is `rss`. */
  unloaded(bytes: number, rss: number): void {
    this.freed += bytes;
    this.rssAtUnload ??= rss;
  }

  /** A load starts at RSS `rss`: what fell since the unloads was returned. */
  loading(rss: number): void {
    if (this.rssAtUnload !== undefined) {
      const returned = Math.max(0, this.rssAtUnload - rss);
      this.kept += Math.max(0, this.freed - returned);
    }
    this.freed = 0;
    this.rssAtUnload = undefined;
  }

  /** A load grew RSS by `growth`: its size, counting the kept memory it may have reused. */
  loaded(growth: number, measuredBefore: number | undefined): number {
    const reused = Math.min(this.kept, measuredBefore === undefined ? this.kept : Math.max(0, measuredBefore - growth));
    this.kept -= reused;
    return growth + reused;
  }
}

// When to come back: the `retry-after` / `retry-after-ms` headers of every refusal a client may retry
// (429, 529, 503), written in one place. Official clients wait exactly what `retry-after-ms` says;
// if every refused caller were told the same wait, they would all return at the same instant and
// be refused together again. So a refusal gets a slot of its own (RetrySlots: the k-th caller
// refused while the server is full is told when the k-th unit of capacity frees), and the header
// adds jitter on top (never earlier than the estimate, up to JITTER later).

/** How much later than the estimate a wait may be told: up to 20%. */
export const JITTER = 0.2;

/** Headers of a retryable refusal: `retry-after` in whole seconds (at least 1, as HTTP wants) and `retry-after-ms`, both jittered. */
export function retryHeaders(expectedMs: number, random: () => number = Math.random): Record<string, string> {
  const ms = Math.max(1, Math.round(Math.max(0, expectedMs) * (1 + JITTER * random())));
  return { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))), 'retry-after-ms': String(ms) };
}

/**
 * Spaced return times for callers refused while something is full. Each refusal reserves the next
 * free slot: no earlier than when capacity is expected back, and one `spacingMs` (what one caller
 * uses up) after the slot told to the caller refused before it. Slots in the past are forgotten.
 */
export class RetrySlots {
  private until = -Infinity;

  /** The wait (ms) to tell a caller refused at `now`, when capacity is back in `earliestMs` and each caller holds it for `spacingMs`. */
  next(now: number, earliestMs: number, spacingMs: number): number {
    const start = Math.max(now + Math.max(0, earliestMs), this.until);
    this.until = start + Math.max(0, spacingMs);
    return start - now;
  }
}

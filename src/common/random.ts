// The project's one seeded generator, mulberry32: a 32-bit state, a period of 2^32, fast and good
// enough for splits, resamples, test cases and synthetic weights (not for anything secret). The
// same seed gives the same numbers on every machine and in every release.

/** A mulberry32 stream of unsigned 32-bit integers from `seed`. */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A seeded uniform generator in [0, 1) (mulberry32's integers over 2^32). */
export function seededRandom(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 4294967296;
}

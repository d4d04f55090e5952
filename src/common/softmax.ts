// The one softmax: probabilities from scores, in float64, max-subtracted (a plain exp overflows past
// ~709), each score divided by a temperature first. The families' readouts (a head's logits over
// their calibration temperature) and the answer builder's normalization of label log-probabilities
// all run through it.

/** softmax(scores / temperature): probabilities that sum to 1. */
export function softmax(scores: readonly number[], temperature = 1): number[] {
  const z = temperature === 1 ? scores : scores.map((x) => x / temperature);
  const max = Math.max(...z);
  const e = z.map((x) => Math.exp(x - max));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}

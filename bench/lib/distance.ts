// How far one model's next-token logits are from another's (a quantized export from its fp32 twin),
// over every position and the whole vocabulary: the two largest differences, which a single outlier
// sets, and two averages, which are less noisy.

export interface Distance {
  /** Largest |Δ logit| over every position and token. */
  logit: number;
  /** Largest |Δ P| (softmax over the vocabulary) over every position and token. */
  p: number;
  /** Root mean square Δ logit over every position and token. */
  rms: number;
  /** Mean over positions of KL(reference ‖ other), in nats: how far the next-token distributions are on average. */
  kl: number;
}

/** `other` against `reference`: one Float32Array of vocabulary logits per position, in both. */
export function distance(other: Float32Array[], reference: Float32Array[]): Distance {
  let logit = 0;
  let p = 0;
  let squares = 0;
  let count = 0;
  let kl = 0;
  reference.forEach((rb, position) => {
    const ra = other[position]!;
    for (let i = 0; i < rb.length; i++) {
      const d = ra[i]! - rb[i]!;
      logit = Math.max(logit, Math.abs(d));
      squares += d * d;
    }
    count += rb.length;
    const pa = softmax(ra);
    const pb = softmax(rb);
    for (let i = 0; i < rb.length; i++) {
      p = Math.max(p, Math.abs(pa[i]! - pb[i]!));
      if (pb[i]! > 0) kl += pb[i]! * Math.log(pb[i]! / Math.max(pa[i]!, 1e-300));
    }
  });
  return { logit, p, rms: Math.sqrt(squares / Math.max(1, count)), kl: kl / Math.max(1, reference.length) };
}

/** "max |Δlogit| / max |ΔP| / rms Δlogit / mean KL", each to 3 significant digits. */
export function formatDistance(d: Distance): string {
  return [d.logit, d.p, d.rms, d.kl].map((v) => v.toPrecision(3)).join(' / ');
}

export const DISTANCE_COLUMNS = 'max |Δlogit| / max |ΔP| / rms Δlogit / mean KL (nats)';

function softmax(row: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  const p = Float64Array.from(row, (v) => Math.exp(v - max));
  let sum = 0;
  for (const v of p) sum += v;
  return p.map((v) => v / sum);
}

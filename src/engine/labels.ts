// Exact probabilities of answer labels that span several tokens.
//
// A label's probability is the probability of its whole token sequence after the prompt:
//   P(t1) · P(t2 | t1) · … · P(tm | t1..tm-1)
// and, when the label is also the beginning of another label ("1" and "12"), the answer must end
// there, so the end-of-turn token is scored after it too. The outcome distribution is these
// sequence probabilities normalized over the labels.

export interface LabelSequence {
  label: string;
  tokens: number[];
}

export function labelSequences(labels: string[], encode: (text: string) => number[], endToken: number): LabelSequence[] {
  const encoded = labels.map((label) => ({ label, tokens: encode(label) }));
  return encoded.map(({ label, tokens }) => {
    const isPrefixOfAnother = encoded.some((o) => o.tokens.length > tokens.length && startsWith(o.tokens, tokens));
    return { label, tokens: isPrefixOfAnother ? [...tokens, endToken] : tokens };
  });
}

/**
 * Log-probability of each label sequence. `first` is the distribution after the prompt;
 * `continueWith(tokens)` returns the distributions after each of tokens[0..k] (one pass over the
 * question's cache). Labels that continue the same way share that pass.
 */
export async function labelLogProbs(
  sequences: LabelSequence[],
  first: Float32Array,
  continueWith: (tokens: number[]) => Promise<Float32Array[]>,
  temperature: number,
): Promise<number[]> {
  const firstLog = logSoftmaxAt(first, temperature);
  const passes = new Map<string, Promise<Float32Array[]>>();
  const result: number[] = [];
  for (const { tokens } of sequences) {
    let logp = firstLog(tokens[0]);
    if (tokens.length > 1) {
      const input = tokens.slice(0, -1);
      const key = input.join(',');
      let pass = passes.get(key);
      if (!pass) {
        pass = continueWith(input);
        passes.set(key, pass);
      }
      const rows = await pass;
      for (let j = 1; j < tokens.length; j++) logp += logSoftmaxAt(rows[j - 1], temperature)(tokens[j]);
    }
    result.push(logp);
  }
  return result;
}

/** log softmax(logits / T)[token], computed in float64. Returns a reader over one distribution. */
export function logSoftmaxAt(logits: Float32Array, temperature: number): (token: number) => number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] - max) / temperature);
  const logZ = Math.log(sum);
  return (token) => (logits[token] - max) / temperature - logZ;
}

export function startsWith(a: number[], prefix: number[]): boolean {
  if (prefix.length > a.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}

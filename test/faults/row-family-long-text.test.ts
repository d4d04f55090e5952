// A long text without whitespace for a row family (80,000 CJK characters: one huge word, which the
// tokenizers split only after reading it whole) takes seconds to plan. Planned on the engine thread,
// it held up every other caller of the model until it was done; planned in the family's planner
// threads (families/rows/planner.ts), another caller's request, sent after it, is answered while it
// is still being planned. Both are answered (the long state cut where the family cuts it, or its
// row refused with a 422). An encoder family (NLI pairs on the ModernBERT replica: byte-level BPE)
// and causal-row families (Kev and Decision: Qwen's tokenizer). No timings: the order of the answers.
import { describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { loadEvaluator } from '../../src/engine/index.js';
import { ensureDecisionReplica } from '../../tools/families/decision/replica.js';
import { ensureKevReplica } from '../../tools/families/kev/replica.js';
import { ensureNliReplica } from '../../tools/families/nli/replica.js';

/** 80,000 CJK characters, no whitespace. */
const LONG = Array.from({ length: 80_000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20_000))).join('');
const question = { type: 'noul', instructions: 'Was the delivery late?' } as const;

describe.each([
  ['an encoder family (nli-pairs)', () => ensureNliReplica('modernbert')],
  ['a causal-row family (kev-pointer)', () => ensureKevReplica()],
  // Its row of the whole state is refused (422: nothing is cut), not failed by a stack overflow.
  ['a causal-row family that refuses the row (decision-endpoint)', () => ensureDecisionReplica()],
])('%s', (_what, folder) => {
  it("another caller's request is answered while an 80,000-character state is still being planned", async () => {
    const evaluator = await loadEvaluator({ modelDir: folder(), threads: 1 });
    try {
      const answered: string[] = [];
      // The long request as the API hands a big body over: its bytes, parsed and planned off the engine thread.
      const body = new TextEncoder().encode(JSON.stringify({ state: LONG, questions: { q: question } }));
      const long = evaluator.evaluateBody!(body).then(
        (r) => (answered.push('long'), r),
        (e: unknown) => {
          answered.push('long');
          if (!(e instanceof BudgetError)) throw e;
        },
      );
      const short = evaluator
        .evaluate({ state: 'The parcel came two days late.', questions: { q: question } })
        .then((r) => (answered.push('short'), r));
      const [, s] = await Promise.all([long, short]);
      expect(s.answers.q!.type).toBe('noul');
      expect(answered).toEqual(['short', 'long']);
    } finally {
      await evaluator.close();
    }
  }, 180_000);
});

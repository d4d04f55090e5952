// A huge state is not tokenized whole (shared/bounded.ts): the tokens a row can hold, its first or
// last max_len, are exactly those of the whole text's tokenization, for each family tokenizer
// (byte-level BPE with ModernBERT's specials; DeBERTa-v3's sentencepiece Unigram with Metaspace and
// a Strip / NFKC normalizer), on texts with every kind of whitespace run at the cut; a text with no
// word boundary near the cut (CJK prose, one huge word) falls back to the whole text.
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { loadEvaluator, UntokenizableError } from '../../src/engine/index.js';
import { ensureNliReplica } from '../../tools/families/nli/replica.js';
import { boundedTokens } from '../../src/engine/families/shared/bounded.js';
import { layaTestTokenizer } from '../../tools/families/laya/tokenizer.js';
import { NLI_TEST_TOKENIZERS } from '../../tools/families/nli/tokenizers.js';

const TOKENIZERS = {
  'byte-level BPE (Laya, ModernBERT)': layaTestTokenizer(),
  'sentencepiece Unigram (DeBERTa-v3)': NLI_TEST_TOKENIZERS.deberta(),
};

/** Prose with runs of spaces, tabs, newlines, punctuation, accents, and CJK words between spaces. */
function text(chars: number, seed: number): string {
  const pieces = [
    'the',
    'parcel',
    'arrived',
    'late,',
    'café',
    'naïve',
    'Straße',
    '注文',
    '返金',
    '"quoted"',
    "it's",
    '42',
    '3.14',
    '—',
    '(x)',
  ];
  const gaps = [' ', ' ', ' ', '  ', '   ', '\t', '\n', '\n\n', ' \n ', '.  '];
  let s = '';
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  while (s.length < chars) s += pieces[Math.floor(next() * pieces.length)]! + gaps[Math.floor(next() * gaps.length)]!;
  return s;
}

describe.each(Object.entries(TOKENIZERS))('%s', (_name, files) => {
  const tokenizer = new Tokenizer(files.tokenizer, files.config);
  const seen: number[] = [];
  const encode = (t: string) => {
    seen.push(t.length);
    return tokenizer.encode(t, { add_special_tokens: false }).ids;
  };

  it.each([1, 2, 3, 4, 5, 6])(
    'text %i: the first and last max_len tokens are exactly the whole tokenization’s',
    (seed) => {
      // Long enough to be cut (over ~38,000 characters at max_len 1,024), short enough for the
      // Unigram tokenizer to take whole (it overflows its stack past ~160,000 characters).
      const big = text(80_000 + seed * 7919, seed);
      const whole = encode(big);
      for (const limit of [64, 512, 1024]) {
        seen.length = 0;
        const start = boundedTokens(encode, big, limit, 'start');
        expect(start.partial).toBe(true);
        expect(Math.max(...seen)).toBeLessThanOrEqual((limit + 32) * 32); // only a piece was tokenized
        expect(start.ids.length).toBeGreaterThanOrEqual(limit);
        expect(start.ids).toEqual(whole.slice(0, start.ids.length));
        const end = boundedTokens(encode, big, limit, 'end');
        expect(end.partial).toBe(true);
        expect(end.ids.length).toBeGreaterThanOrEqual(limit);
        expect(end.ids).toEqual(whole.slice(whole.length - end.ids.length));
      }
    },
  );

  it('a text short enough, or with no word boundary near the cut, is tokenized whole', () => {
    const short = text(20_000, 9);
    expect(boundedTokens(encode, short, 1024, 'start')).toEqual({ ids: encode(short), partial: false });
    const cjk = '今天的天气非常好我们去公园散步吧'.repeat(2_500);
    expect(boundedTokens(encode, cjk, 64, 'start')).toEqual({ ids: encode(cjk), partial: false });
  });
});

describe('a text the tokenizer cannot take', () => {
  it("is the caller's 422 (UntokenizableError), not a 500", async () => {
    // @huggingface/tokenizers' Unigram (DeBERTa-v3's sentencepiece) overflows its stack on a long
    // run without whitespace (where it does depends on the thread's stack: 400,000 characters on the
    // main thread's; a planner thread's larger stack takes this one, and refuses a longer run the same
    // way). Planned on the calling thread here, whose stack it overflows.
    const e = await loadEvaluator({
      modelDir: ensureNliReplica('deberta'),
      variant: 'fp32',
      threads: 1,
      engineThread: false,
      plannerThreads: 0,
    });
    try {
      const state = '今天的天气非常好我们去公园散步吧'.repeat(25_000);
      const error = await e
        .evaluate({ state, questions: { q: { type: 'noul', instructions: 'Is it sunny?' } } })
        .catch((x: unknown) => x);
      expect(error).toBeInstanceOf(UntokenizableError);
      expect((error as UntokenizableError).run).toBe(state.length);
      // The model still answers.
      const ok = await e.evaluate({
        state: 'It is sunny.',
        questions: { q: { type: 'noul', instructions: 'Is it sunny?' } },
      });
      expect(ok.answers.q!.type).toBe('noul');
    } finally {
      await e.close();
    }
  }, 120_000);
});

// Deterministic English-ish text and question sets for the benchmarks, sized in real tokens.
import { seededRandom } from '../../src/internal.js';
import type { ChoiceQuestion, NoulQuestion, Question, ScoreQuestion, TextCodec } from '../../src/internal.js';

const WORDS = (
  'the of and to in is was that for on with as by at from this which be are an or have had not but one all were they ' +
  'their there been has more when will would who so no if out up about into than them can only other new some could time ' +
  'these two may then first any like now such over also back after use our well way even because most us ' +
  'customer order delivery invoice account payment refund product service support team report meeting project review ' +
  'quality price contract client manager email phone address week month year morning evening office store market ' +
  'arrived late damaged broken missing happy satisfied disappointed excellent poor quickly slowly carefully clearly ' +
  'requested confirmed cancelled returned replaced shipped received delayed approved rejected updated described ' +
  'software hardware laptop screen battery network server database system feature release version update issue ' +
  'weather river mountain city village garden kitchen school hospital library museum station airport bridge road'
).split(/\s+/);

/** A small deterministic PRNG: the project's one mulberry32 (src/common/random.ts). */
export const rng = seededRandom;

function sentence(rand: () => number): string {
  const n = 6 + Math.floor(rand() * 12);
  const words: string[] = [];
  for (let i = 0; i < n; i++) words.push(WORDS[Math.floor(rand() * WORDS.length)]!);
  words[0] = words[0]![0]!.toUpperCase() + words[0]!.slice(1);
  return words.join(' ') + (rand() < 0.15 ? '?' : '.');
}

/**
 * English-ish text whose encoding has exactly `tokens` tokens (with the model's own tokenizer).
 * Sentences are added while they fit; the remainder is padded with " a", always one token of its own
 * (Qwen's pre-tokenizer cuts before every space-led word, so token counts add up).
 */
export function textOfTokens(codec: TextCodec, tokens: number, seed = 1): string {
  const rand = rng(seed);
  let text = '';
  let count = 0;
  for (;;) {
    const next = (text ? ' ' : '') + sentence(rand);
    // Pieces that start with a space are pre-tokenized apart, so counts add; checked at the end.
    const n = count + codec.encode(next).length;
    if (n > tokens) break;
    text += next;
    count = n;
  }
  if (count === 0 && tokens > 0) {
    text = 'A';
    count = 1;
  }
  text += ' a'.repeat(tokens - count);
  const got = codec.encode(text).length;
  if (got !== tokens) throw new Error(`textOfTokens: wanted ${tokens} tokens, got ${got}`);
  return text;
}

const NOUL = [
  'Does the content mention a delivery problem?',
  'Is the customer satisfied overall?',
  'Does the text ask for a refund?',
  'Is a deadline mentioned?',
  'Is the tone of the content polite?',
  '内容中是否提到了付款问题？',
];
const CHOICE: Array<[string, Record<string, string | null>]> = [
  [
    'What is the main topic?',
    {
      billing: 'payments, invoices, refunds',
      shipping: 'delivery and tracking',
      product: 'the product itself',
      other: null,
    },
  ],
  [
    'Which department should handle this?',
    { sales: null, support: 'technical help', finance: 'money matters', legal: 'contracts' },
  ],
  ['这段内容的情绪是什么？', { positive: '积极', negative: '消极', neutral: '中性', mixed: '混合' }],
];
const SCORE: Array<[string, string[]]> = [
  ['How urgent is the request?', ['not urgent', 'somewhat urgent', 'urgent', 'very urgent', 'critical']],
  ['How clear is the writing?', ['unclear', 'mostly clear', 'clear']],
  ['How complete is the information?', ['missing most', 'partial', 'mostly complete', 'complete']],
];

/** `n` questions of mixed types (noul, choice with 4 options, score with up to 5 levels), in a fixed rotation. */
export function mixedQuestions(n: number, seed = 7): Record<string, Question> {
  const out: Record<string, Question> = {};
  const rand = rng(seed);
  for (let i = 0; i < n; i++) {
    const kind = i % 3;
    out[`q${i}`] = kind === 0 ? noul(i) : kind === 1 ? choice(i) : score(i);
  }
  void rand;
  return out;
}

/**
 * Questions shaped like the first public client: 60% noul, 28% choice with 4 options,
 * 12% score with ≤ 5 levels, some in Chinese. Deterministic per seed.
 */
export function clientQuestions(n: number, seed: number): Record<string, Question> {
  const rand = rng(seed);
  const out: Record<string, Question> = {};
  for (let i = 0; i < n; i++) {
    const r = rand();
    const k = Math.floor(rand() * 1000);
    out[`q${i}`] = r < 0.6 ? noul(k) : r < 0.88 ? choice(k) : score(k);
  }
  return out;
}

function noul(i: number): NoulQuestion {
  const instructions = NOUL[i % NOUL.length];
  return i % 2 === 0
    ? { type: 'noul', instructions }
    : { type: 'noul', instructions, criteria: { true: 'clearly stated', false: 'absent or unclear' } };
}

function choice(i: number): ChoiceQuestion {
  const [instructions, criteria] = CHOICE[i % CHOICE.length]!;
  return { type: 'choice', instructions, criteria };
}

function score(i: number): ScoreQuestion {
  const [instructions, criteria] = SCORE[i % SCORE.length]!;
  return { type: 'score', instructions, criteria };
}

/** Workload (a): ~9 questions per request on a 300-token English state, a fresh state per request. */
export function clientRequestsA(
  codec: TextCodec,
  count: number,
  seed = 100,
): Array<{ state: string; questions: Record<string, Question> }> {
  return Array.from({ length: count }, (_, i) => ({
    state: textOfTokens(codec, 300, seed + i),
    questions: clientQuestions(8 + (i % 3), seed + i), // 8, 9, 10: about 9 on average
  }));
}

/** Workload (b): one question per request on a `tokens`-token state, a fresh state per request. */
export function clientRequestsB(
  codec: TextCodec,
  tokens: number,
  count: number,
  seed = 200,
): Array<{ state: string; questions: Record<string, Question> }> {
  return Array.from({ length: count }, (_, i) => ({
    state: textOfTokens(codec, tokens, seed + tokens + i),
    questions: clientQuestions(1, seed + i),
  }));
}

// The batch bench's corpus, deterministic: `states` tickets of 100–300 tokens (English-ish support
// text) × `questions` distinct questions (noul, choice, score in rotation), one question per line,
// state-major (a ticket's 50 lines one after another, as a corpus is usually walked); and the
// interactive load's requests, three questions each on states of their own.
import type { Question, TextCodec } from '../../src/internal.js';
import { textOfTokens } from '../lib/text.js';

const ASPECTS = [
  'the delivery',
  'the invoice',
  'the product quality',
  'the support team',
  'a refund',
  'the account',
  'the price',
  'the website',
  'the warranty',
  'the shipping cost',
  'the packaging',
  'the battery',
  'the screen',
  'the contract',
  'the order status',
  'the phone line',
  'the store staff',
  'the software update',
];

/** The i-th of the corpus's distinct questions: noul, choice, score in turn, each on its own aspect. */
export function corpusQuestion(i: number): Question {
  const aspect = ASPECTS[Math.floor(i / 3) % ASPECTS.length]!;
  const round = Math.floor(i / (3 * ASPECTS.length));
  const tail = round === 0 ? '' : ` (reading ${round + 1})`;
  switch (i % 3) {
    case 0:
      return { type: 'noul', instructions: `Does the ticket report a problem with ${aspect}?${tail}` };
    case 1:
      return {
        type: 'choice',
        instructions: `What does the customer say about ${aspect}?${tail}`,
        criteria: { praise: 'positive remarks', complaint: 'negative remarks', question: null, nothing: null },
      };
    default:
      return {
        type: 'score',
        instructions: `How strongly does the customer feel about ${aspect}?${tail}`,
        criteria: ['not at all', 'a little', 'somewhat', 'strongly', 'very strongly'],
      };
  }
}

/** A ticket of 100–300 tokens (the count varies with `i`), its text a function of `i` and `seed`. */
export function ticket(codec: TextCodec, i: number, seed: number): string {
  const tokens = 100 + ((i * 73) % 201);
  return `Ticket ${seed}-${i}. ${textOfTokens(codec, tokens, seed * 100_003 + i)}`;
}

export interface Line {
  custom_id: string;
  body: { model: string; state: string; questions: Record<string, Question> };
}

/** `lines` lines over ceil(lines / questions) tickets, `questions` a ticket (the last may have fewer). */
export function corpusLines(codec: TextCodec, model: string, lines: number, questions: number): Line[] {
  const out: Line[] = [];
  for (let s = 0; out.length < lines; s++) {
    const state = ticket(codec, s, 1);
    for (let q = 0; q < questions && out.length < lines; q++)
      out.push({ custom_id: `s${s}-q${q}`, body: { model, state, questions: { [`q${q}`]: corpusQuestion(q) } } });
  }
  return out;
}

/** The interactive load: a typical request, three questions (one of each type) on a ticket of its own. */
export function interactiveRequest(codec: TextCodec, model: string, i: number) {
  const questions: Record<string, Question> = {};
  const base = (i % ASPECTS.length) * 3;
  for (const q of [base, base + 1, base + 2]) questions[`q${q}`] = corpusQuestion(q);
  return { model, state: ticket(codec, i, 2), questions };
}

/** The JSONL input of a batch. */
export function jsonl(lines: Line[]): string {
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

// The decider-labels layout (docs/families/decider-labels.md), pure: a request → the context every
// row starts with and one row per question (one per level of a score question), each ending at the
// `(` slot whose next token is the answer's label. Content is data: `encode` takes caller text as
// ordinary text (special-token strings in it are never control tokens).
import type { EvaluateRequest, Question } from '../../types.js';
import { boundedTokens } from '../shared/bounded.js';
import { askedInOrder } from '../shared/question.js';
import { NARROW, type LabelTable } from './labels.js';
import { askedRows, DeciderRefusal } from './question.js';
import { stateText } from './state.js';

/** The context's tokens (`Context:\n` and the state) are cut to this many. */
export const CONTEXT_TOKENS = 32_768;

export interface DeciderTokenizer {
  /** Token ids of a text taken as data, no special tokens added. */
  encode(text: string): number[];
  labels: LabelTable;
}

export interface DeciderRow {
  /** The caller's question id. */
  key: string;
  /** The score level this row judges (isolated rows). */
  level?: number;
  /** The row's tokens after the context, ending at the slot (the `(` before the answer). */
  piece: number[];
  /** The label token ids, in the order the options are listed. */
  labels: number[];
}

export interface DeciderQuestion {
  key: string;
  question: Question;
  /** A choice question's option names in the order sent (the answer's). */
  options?: string[];
  /** Indices of its rows in `rows`. */
  rows: number[];
}

export interface DeciderLayout {
  /** `Context:\n` + the state, cut at CONTEXT_TOKENS: every row's start. */
  ctx: number[];
  /** The state was cut. */
  cut: boolean;
  rows: DeciderRow[];
  questions: DeciderQuestion[];
}

/** One row's tokens after the context: the question, its options labelled, the slot. */
function piece(
  tok: DeciderTokenizer,
  question: string,
  options: readonly string[],
): { piece: number[]; labels: number[] } {
  const k = options.length;
  if (k > tok.labels.ids.length)
    throw new DeciderRefusal(
      k,
      tok.labels.ids.length,
      `this model labels at most ${tok.labels.ids.length} options; this question has ${k}`,
    );
  const labels = tok.labels.ids.slice(0, k);
  const head = `\n\nQuestion: ${question}\nOptions:`;
  if (k <= NARROW) {
    const listed = options.map((o, j) => `\n(${tok.labels.strings[j]!}) ${o}`).join('');
    return { piece: tok.encode(`${head}${listed}\nAnswer: (`), labels };
  }
  // Wide: segment by segment, each label inserted as its token.
  const ids = [...tok.encode(head)];
  const open = tok.encode('\n(');
  options.forEach((o, j) => ids.push(...open, labels[j]!, ...tok.encode(`) ${o}`)));
  ids.push(...tok.encode('\nAnswer: ('));
  return { piece: ids, labels };
}

/** The request's rows; throws DeciderRefusal (422) for a question the contract cannot ask. */
export function deciderLayout(request: EvaluateRequest, tok: DeciderTokenizer): DeciderLayout {
  const rows: DeciderRow[] = [];
  const questions: DeciderQuestion[] = [];
  for (const { key, question, layout, options } of askedInOrder(request)) {
    const at = rows.length;
    for (const asked of askedRows(layout)) {
      const { piece: ids, labels } = piece(tok, asked.question, asked.options);
      rows.push({ key, ...(asked.level === undefined ? {} : { level: asked.level }), piece: ids, labels });
    }
    questions.push({
      key,
      question,
      ...(options ? { options } : {}),
      rows: rows.map((_, i) => i).slice(at),
    });
  }
  const bounded = boundedTokens(tok.encode, `Context:\n${stateText(request.state)}`, CONTEXT_TOKENS, 'start');
  const cut = bounded.ids.length > CONTEXT_TOKENS;
  return {
    ctx: cut ? bounded.ids.slice(0, CONTEXT_TOKENS) : bounded.ids,
    cut: cut || bounded.partial,
    rows,
    questions,
  };
}

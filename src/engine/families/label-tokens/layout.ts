// The label-tokens layout (docs/families/label-tokens.md, "Rows"), pure: a request → the prefix
// every row starts with (the chat's opening and the state's segment) and one row per question
// (the question's segment with its options labelled, the chat's closing, the assistant prefix),
// whose last token is the slot the answer's label token follows. The contract's literal pieces are
// tokens already (settings.ts); every caller value is encoded alone, as data.
import type { Content, EvaluateRequest, Question } from '../../types.js';
import { boundedTokens } from '../shared/bounded.js';
import { askedInOrder, type FamilyQuestion } from '../shared/question.js';
import { LabelTokensRefusal } from './refusal.js';
import { MAX_LEVELS } from '../decider/question.js';
import type { EncodedPart, LabelTokensSettings } from './settings.js';
import { described, rendered, withDescription } from './values.js';

export interface LabelTokensRow {
  /** The caller's question id. */
  key: string;
  question: Question;
  /** A choice question's option names in the order sent (the answer's). */
  options?: string[];
  /** The row's tokens after the prefix, ending at the slot. */
  piece: number[];
  /** The label ids of the options, in the order written. */
  labels: number[];
  /** Their strings. */
  strings: string[];
}

export interface LabelTokensLayout {
  /** The chat's opening and the state's segment (the state cut to state_tokens): every row's start. */
  prefix: number[];
  /** The state was cut. */
  cut: boolean;
  rows: LabelTokensRow[];
}

export interface LabelTokensEncoders {
  /** A caller value's ids, as data. */
  data(text: string): number[];
  /** The state's (bounded by its cut); default `data`. */
  state?(text: string): number[];
}

/** The option strings a question writes (in order) and its table, or the refusal. */
function written(q: FamilyQuestion, s: LabelTokensSettings): { options: string[]; table: 'choice' | 'noul' | 'score' } {
  if (!s.types.includes(q.type))
    throw new LabelTokensRefusal(
      'type',
      0,
      0,
      `this model answers ${s.types.join(', ')} questions only; this one is a ${q.type} question`,
    );
  if (q.type === 'choice') {
    const n = q.options.length;
    if (n < 2 || n > s.maxOptions)
      throw new LabelTokensRefusal(
        'options',
        n,
        s.maxOptions,
        `this model answers a choice question of 2 to ${s.maxOptions} options; this one has ${n}`,
      );
    return { options: q.options.map(([name, d]) => withDescription(name, d, s.render)), table: 'choice' };
  }
  if (q.type === 'score') {
    const n = q.criteria.length;
    const most = Math.min(MAX_LEVELS, s.labels.score.ids.length);
    if (n < 2 || n > most)
      throw new LabelTokensRefusal(
        'levels',
        n,
        most,
        `this model answers a score question of 2 to ${most} levels; this one has ${n}`,
      );
    return { options: q.criteria.map((d) => described(d, s.render)), table: 'score' };
  }
  const c = q.criteria ?? {};
  return { options: s.noul.order.map((side) => withDescription(s.noul[side], c[side], s.render)), table: 'noul' };
}

/** A template's tokens with its placeholders filled by `fill`. */
function filled(parts: readonly EncodedPart[], fill: (slot: EncodedPart & { slot: string }) => number[]): number[] {
  const ids: number[] = [];
  for (const p of parts) for (const id of 'ids' in p ? p.ids : fill(p)) ids.push(id);
  return ids;
}

/** The request's rows; throws LabelTokensRefusal (422) for a question the contract cannot ask. */
export function labelTokensLayout(
  request: EvaluateRequest,
  s: LabelTokensSettings,
  enc: LabelTokensEncoders,
): LabelTokensLayout {
  const value = (v: Content | null | undefined) => enc.data(rendered(v, s.render));
  const rows: LabelTokensRow[] = [];
  for (const { key, question, layout, options } of askedInOrder(request)) {
    const { options: texts, table } = written(layout, s);
    const labels = s.labels[table].ids.slice(0, texts.length);
    const option = (j: number) => filled(s.option, (p) => (p.slot === 'label' ? [labels[j]!] : value(texts[j]!)));
    const piece = filled(s.question, (p) =>
      p.slot === 'question' ? value(layout.instructions ?? '') : texts.flatMap((_, j) => option(j)),
    );
    rows.push({
      key,
      question,
      ...(options ? { options } : {}),
      piece: [...piece, ...s.tail],
      labels,
      strings: s.labels[table].strings.slice(0, texts.length),
    });
  }
  const bounded = boundedTokens(enc.state ?? enc.data, rendered(request.state, s.render), s.stateTokens, 'start');
  const cut = bounded.ids.length > s.stateTokens || bounded.partial;
  const state = bounded.ids.length > s.stateTokens ? bounded.ids.slice(0, s.stateTokens) : bounded.ids;
  return { prefix: [...s.head, ...state, ...s.stateTail], cut, rows };
}

// The Laya layout (`laya-markers`): one question and the state → the encoder's token row, the
// positions of its option markers and the question type id, by the rules of the authors'
// `build_sequence` / `render_options` (laya/common.py, and agent.py for what calls them). The
// rules, their sources and Assay's one deviation: docs/families/laya-markers.md. Pure: the
// tokenizer is passed in; nothing here reads files or keeps state.
import { BudgetError } from '../../errors.js';
import type { Content } from '../../types.js';
import { boundedTokens } from '../shared/bounded.js';
import { pyJsonDumps } from '../shared/pyjson.js';
import { familyQuestion, type FamilyQuestion } from '../shared/question.js';
import { specialsNeutraliser } from '../shared/specials.js';

/** The head's question type ids (the type embedding's rows). */
export const LAYA_QTYPE = { choice: 0, score: 1, noul: 2 } as const;

/** The reference's constants, named (a test changes one to show the goldens notice). */
export interface LayaRules {
  /** Tokens kept of one rendered option (after its marker). */
  optionTokens: number;
  /** Below this many tokens of head_max_len left for the instructions, options are cut evenly. */
  minHeadRoom: number;
  /** The least an option keeps (marker included) when options are cut evenly. */
  minPerOption: number;
  /** The instructions keep at least this many tokens. */
  minInstructionTokens: number;
  /** Neutralise every special-token string in user text, not only the mask token (Assay's deviation). */
  neutraliseAllSpecials: boolean;
}

export const LAYA_RULES: Readonly<LayaRules> = {
  optionTokens: 48,
  minHeadRoom: 16,
  minPerOption: 4,
  minInstructionTokens: 8,
  neutraliseAllSpecials: true,
};

/** The model's limits, from rl_agent_config.json (`max_len`, `head_max_len`). */
export interface LayaLimits {
  /** Tokens in a row, everything included. */
  maxLen: number;
  /** Tokens the options and the instructions share. */
  headMaxLen: number;
}

/** What the layout needs of the family's tokenizer. */
export interface LayaTokenizer {
  /** Token ids of a text, as the tokenizer encodes it with no special tokens added. */
  encode(text: string): number[];
  clsId: number;
  sepId: number;
  maskId: number;
  maskToken: string;
  /** Every special-token string of the tokenizer (`[CLS]`, `[SEP]`, …): neutralised in user text. */
  specialTokens: readonly string[];
}

/**
 * A question as the layout reads it (shared/question.ts). A choice question's options are an
 * ordered list of [name, description]: the caller's order is the markers' order and the answer's.
 */
export type LayaQuestion = FamilyQuestion;

/** What the layout cut, by the reference's design (the caller reports it; nothing is refused). */
export interface LayaTruncation {
  /** The state's tokens kept of its total: its start (a string or object state) or its end (a list: the newest turns). */
  state?: { kept: number; total: number; keep: 'start' | 'end'; atLeast?: true };
  /** The instructions' tokens kept of their total (they keep at least 8, else what the options leave of head_max_len). */
  instructions?: { kept: number; total: number };
  /** How many options lost tokens: to the 48-token cap, or to the even cut (`perOption` tokens each, marker included). */
  options?: { cut: number; perOption: number | null };
  /** The assembled row was longer than max_len and lost its end (the state's closing [SEP], maybe option tokens). */
  row?: { kept: number; total: number };
}

export interface LayaRow {
  ids: number[];
  /** Position of each option's marker ([MASK]) in `ids`, in option order. */
  markerPositions: number[];
  qtype: number;
  /** The option keys in marker order: choice names, score levels ("0", "1", …), noul ["false", "true"]. */
  options: string[];
  truncated?: LayaTruncation;
}

/**
 * The question's options do not all fit in max_len: the reference drops the markers past it and
 * then refuses the question ("options exceed head_max_len"), and so does Assay. A BudgetError
 * ('context'), so the API answers it as any over-long request (422) with this message.
 */
export class LayaOptionsTooLong extends BudgetError {
  constructor(
    /** Options the question has. */
    readonly options: number,
    /** Options whose marker fell inside max_len. */
    readonly optionsKept: number,
    /** Tokens the row needs with an empty state. */
    count: number,
    /** max_len. */
    limit: number,
    readonly headMaxLen: number,
  ) {
    super('context', count, limit);
    this.name = 'LayaOptionsTooLong';
    this.message =
      `this model reads at most ${limit} tokens a question and its options share ${headMaxLen} of them ` +
      `(at least 4 tokens each): ${optionsKept} of the question's ${options} options fit; send fewer options`;
  }
}

/** The protocol's question as the layout reads it: choice options in the parsed object's key order. */
export const layaQuestion = familyQuestion;

/** A criterion as the reference renders it: a string as is, anything else as Python's JSON. */
function criterion(value: Content): string {
  return typeof value === 'string' ? value : pyJsonDumps(value);
}

/** The option texts in marker order, with their keys (render_options). */
export function renderLayaOptions(q: LayaQuestion): { keys: string[]; texts: string[] } {
  switch (q.type) {
    case 'choice':
      return {
        keys: q.options.map(([name]) => name),
        // Only null and "" mean "no description".
        texts: q.options.map(([name, d]) => (d === null || d === '' ? name : `${name}: ${criterion(d)}`)),
      };
    case 'score':
      return {
        keys: q.criteria.map((_, i) => String(i)),
        texts: q.criteria.map((c, i) => `level ${i}: ${criterion(c)}`),
      };
    case 'noul': {
      const side = (d: Content | null | undefined, fallback: string): string =>
        d === null || d === undefined || d === '' ? fallback : criterion(d);
      return {
        keys: ['false', 'true'],
        texts: [
          `false: ${side(q.criteria?.false, 'no, the statement does not hold')}`,
          `true: ${side(q.criteria?.true, 'yes, the statement holds')}`,
        ],
      };
    }
  }
}

/**
 * The instructions' text: a string as is, anything else as Python's JSON (agent.py `_to_internal`).
 * Absent instructions read as null (`null`): the reference refuses a question without them, the
 * contract makes them optional.
 */
export function layaInstructions(ins: Content | null | undefined): string {
  return typeof ins === 'string' ? ins : pyJsonDumps(ins ?? null);
}

/** The state's text: a string as is, anything else as Python's JSON (serialize_state). */
export function layaStateText(state: Content): string {
  return typeof state === 'string' ? state : pyJsonDumps(state);
}

/** Replaces every neutralised token string in user text by a space (the reference: the mask token only). */
export function neutraliser(tok: LayaTokenizer, rules: Readonly<LayaRules> = LAYA_RULES): (text: string) => string {
  return specialsNeutraliser(rules.neutraliseAllSpecials ? [tok.maskToken, ...tok.specialTokens] : [tok.maskToken]);
}

/**
 * The row of one question over the state (build_sequence with agent.py's arguments: list states
 * keep their end). Throws LayaOptionsTooLong when an option's marker falls past max_len.
 */
export function layaLayout(
  question: LayaQuestion,
  state: Content,
  tok: LayaTokenizer,
  limits: LayaLimits,
  rules: Readonly<LayaRules> = LAYA_RULES,
): LayaRow {
  const neutral = neutraliser(tok, rules);
  const { keys, texts } = renderLayaOptions(question);
  const truncated: LayaTruncation = {};

  const head = tok.encode(`${question.type} question: ${neutral(layaInstructions(question.instructions))}`);
  let cut = 0;
  let options = texts.map((text) => {
    const ids = tok.encode(` ${neutral(text)}`);
    if (ids.length > rules.optionTokens) cut++;
    return { full: ids.length + 1, ids: [tok.maskId, ...ids.slice(0, rules.optionTokens)] };
  });
  const total = (): number => options.reduce((n, o) => n + o.ids.length, 0);
  let headRoom = limits.headMaxLen - total();
  let perOption: number | null = null;
  if (headRoom < rules.minHeadRoom) {
    const per = Math.max(
      rules.minPerOption,
      Math.floor((limits.headMaxLen - rules.minHeadRoom) / Math.max(1, options.length)),
    );
    perOption = per;
    options = options.map((o) => ({ ...o, ids: o.ids.slice(0, per) }));
    headRoom = limits.headMaxLen - total();
    cut = options.filter((o) => o.ids.length < o.full).length;
  }
  if (cut > 0) truncated.options = { cut, perOption };
  const headKept = Math.max(rules.minInstructionTokens, headRoom);
  if (head.length > headKept) truncated.instructions = { kept: headKept, total: head.length };

  const ids = [tok.clsId, ...head.slice(0, headKept), tok.sepId];
  const markers: number[] = [];
  for (const o of options) {
    markers.push(ids.length);
    ids.push(...o.ids);
  }
  ids.push(tok.sepId);

  const kept = markers.filter((m) => m < limits.maxLen).length;
  if (kept < markers.length)
    throw new LayaOptionsTooLong(markers.length, kept, ids.length + 1, limits.maxLen, limits.headMaxLen);

  const room = Math.max(0, limits.maxLen - ids.length - 1);
  const keepEnd = Array.isArray(state);
  const keep = keepEnd ? 'end' : 'start';
  // Never more than max_len of the state's tokens are read: a huge state is not tokenized whole.
  const { ids: stateIds, partial } = boundedTokens(tok.encode, neutral(layaStateText(state)), limits.maxLen, keep);
  const st = keepEnd ? stateIds.slice(Math.max(0, stateIds.length - room)) : stateIds.slice(0, room);
  if (st.length < stateIds.length)
    truncated.state = { kept: st.length, total: stateIds.length, keep, ...(partial ? { atLeast: true } : {}) };
  for (const id of st) ids.push(id);
  ids.push(tok.sepId);
  if (ids.length > limits.maxLen) {
    truncated.row = { kept: limits.maxLen, total: ids.length };
    ids.length = limits.maxLen;
  }

  const row: LayaRow = { ids, markerPositions: markers, qtype: LAYA_QTYPE[question.type], options: keys };
  if (Object.keys(truncated).length > 0) row.truncated = truncated;
  return row;
}

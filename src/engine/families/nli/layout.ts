// The NLI pairs layout (`nli-pairs`): one question and the state → one (premise, hypothesis) row
// per option for a zero-shot NLI cross-encoder, by the rules of Hugging Face transformers'
// ZeroShotClassificationPipeline (premise = the text, hypothesis = the template with the label,
// pair truncation `only_first`). The rules, their sources and Assay's deviations:
// docs/families/nli-pairs.md. Pure: the tokenizer and the folder's settings are passed in.
import { BudgetError } from '../../errors.js';
import type { Content } from '../../types.js';
import { boundedTokens } from '../shared/bounded.js';
import { pyJsonDumps } from '../shared/pyjson.js';
import type { FamilyQuestion } from '../shared/question.js';
import { specialsNeutraliser } from '../shared/specials.js';
import type { HypothesisTemplate } from './template.js';

/** A question as the layout reads it: choice options as an ordered [name, description] list. */
export type NliQuestion = FamilyQuestion;

/** One piece of the tokenizer's pair template: special tokens, or the premise (A) / hypothesis (B). */
export type PairPiece = { special: readonly number[]; typeId: number } | { sequence: 'A' | 'B'; typeId: number };

/** What the layout needs of the family's tokenizer (nliTokenizer builds it from the folder). */
export interface NliTokenizer {
  /** Token ids of a text, with no special tokens added (each sequence of a pair is encoded alone). */
  encode(text: string): number[];
  /** The post-processor's pair template, e.g. `[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1`. */
  pair: readonly PairPiece[];
  /** Whether the model reads token_type_ids (tokenizer_config.json's `model_input_names`). */
  typeIds: boolean;
  /** Every special-token string: neutralised in user text. */
  specialTokens: readonly string[];
}

/** The folder's settings the layout reads (readNliConfig, config.ts). */
export interface NliLayoutConfig {
  /** Tokens in a row, special tokens included: the pair truncation's max_length. */
  maxLen: number;
  /** The hypothesis template of each question type. */
  templates: Readonly<Record<NliQuestion['type'], HypothesisTemplate>>;
}

/** The rules, named (a test changes one to show the goldens notice). */
export interface NliRules {
  /** Neutralise the tokenizer's special-token strings in user text (Assay's deviation). */
  neutraliseSpecials: boolean;
  /** The premise keeps at least one token (`only_first` errors when it would lose all of them). */
  premiseKeepsOne: boolean;
  /** Which end of the premise `only_first` cuts (the tokenizer's truncation_side, right by default). */
  cutPremise: 'end' | 'start';
  /** Between a choice option's name and its description. */
  descriptionSeparator: string;
}

export const NLI_RULES: Readonly<NliRules> = {
  neutraliseSpecials: true,
  premiseKeepsOne: true,
  cutPremise: 'end',
  descriptionSeparator: ': ',
};

export interface NliRow {
  ids: number[];
  /** Per the pair template (premise side 0, hypothesis side 1 for DeBERTa-v3); absent when the model reads none. */
  tokenTypeIds?: number[];
  /** All ones: a row is unpadded; nliBatch pads a batch. */
  attentionMask: number[];
  /** The premise lost its end: `only_first` truncation, by the reference's design (reported, not refused). */
  truncated?: { premise: { kept: number; total: number } };
}

export interface NliLayout {
  /** One row per option, in option order. */
  rows: NliRow[];
  /** The option keys in row order: choice names, score levels ("0", "1", …), noul ["true"]. */
  options: string[];
}

/**
 * Even the hypothesis of one row, with the pair's special tokens, leaves no token of max_len for
 * the state: `only_first` cannot cut enough (the pipeline then runs the row untruncated, past the
 * model's length). Assay refuses it: a BudgetError ('context', so the API answers 422) naming the limit.
 */
export class NliHypothesisTooLong extends BudgetError {
  constructor(
    /** The row (option index) whose hypothesis does not fit. */
    readonly option: number,
    /** Its hypothesis' tokens, special tokens of the pair included. */
    readonly hypothesisTokens: number,
    /** The row's tokens with the whole premise. */
    count: number,
    /** max_len. */
    limit: number,
  ) {
    super('context', count, limit);
    this.name = 'NliHypothesisTooLong';
    this.message =
      `this model reads at most ${limit} tokens a row (the state and one option's hypothesis); ` +
      `the hypothesis of option ${option} takes ${hypothesisTokens} of them with the special tokens, ` +
      `leaving no room for the state; shorten the option or the instructions`;
  }
}

/** Content as text: a string as is, anything else as Python's json.dumps (ensure_ascii=False). */
export function nliText(value: Content | null | undefined): string {
  return typeof value === 'string' ? value : pyJsonDumps(value ?? null);
}

/**
 * The label each row's hypothesis is made from, with its key:
 * - choice: `name`, or `name: description` (a description null or "" is none);
 * - score: each level's description;
 * - noul: one row, the statement: `criteria.true` when it is given (not null, not ""), else the
 *   instructions. `criteria.false` is not read (P(yes) is the row's entailment against its
 *   contradiction column, docs/families/nli-pairs.md).
 */
export function nliLabels(q: NliQuestion, rules: Readonly<NliRules> = NLI_RULES): { keys: string[]; labels: string[] } {
  switch (q.type) {
    case 'choice':
      return {
        keys: q.options.map(([name]) => name),
        labels: q.options.map(([name, d]) =>
          d === null || d === '' ? name : `${name}${rules.descriptionSeparator}${nliText(d)}`,
        ),
      };
    case 'score':
      return { keys: q.criteria.map((_, i) => String(i)), labels: q.criteria.map((c) => nliText(c)) };
    case 'noul': {
      const yes = q.criteria?.true;
      return {
        keys: ['true'],
        labels: [nliText(yes === null || yes === undefined || yes === '' ? q.instructions : yes)],
      };
    }
  }
}

/** The rows of one question over the state. Throws NliHypothesisTooLong when a hypothesis leaves no room. */
export function nliLayout(
  question: NliQuestion,
  state: Content,
  tok: NliTokenizer,
  config: NliLayoutConfig,
  rules: Readonly<NliRules> = NLI_RULES,
): NliLayout {
  const neutral = rules.neutraliseSpecials ? specialsNeutraliser(tok.specialTokens) : (t: string) => t;
  const { keys, labels } = nliLabels(question, rules);
  const template = config.templates[question.type];
  const instructions = neutral(nliText(question.instructions));
  // Never more than max_len of the premise's tokens are read: a huge state is not tokenized whole.
  const { ids: premise } = boundedTokens(
    tok.encode,
    neutral(nliText(state)),
    config.maxLen,
    rules.cutPremise === 'end' ? 'start' : 'end',
  );
  const specials = tok.pair.reduce((n, p) => n + ('special' in p ? p.special.length : 0), 0);

  const rows = labels.map((label, option): NliRow => {
    const hypothesis = tok.encode(template.format(neutral(label), instructions));
    const total = premise.length + hypothesis.length + specials;
    let a = premise;
    let truncated: NliRow['truncated'];
    if (total > config.maxLen) {
      const remove = total - config.maxLen;
      const fits = rules.premiseKeepsOne ? premise.length > remove : premise.length >= remove;
      if (!fits) throw new NliHypothesisTooLong(option, hypothesis.length + specials, total, config.maxLen);
      const keep = premise.length - remove;
      a = rules.cutPremise === 'end' ? premise.slice(0, keep) : premise.slice(remove);
      truncated = { premise: { kept: keep, total: premise.length } };
    }
    const ids: number[] = [];
    const types: number[] = [];
    for (const piece of tok.pair) {
      const part = 'special' in piece ? piece.special : piece.sequence === 'A' ? a : hypothesis;
      for (const id of part) {
        ids.push(id);
        types.push(piece.typeId);
      }
    }
    const row: NliRow = { ids, attentionMask: ids.map(() => 1) };
    if (tok.typeIds) row.tokenTypeIds = types;
    if (truncated) row.truncated = truncated;
    return row;
  });
  return { rows, options: keys };
}

/** A batch of rows padded on the right to its longest row (mask 0, type id 0): the encoder's input. */
export interface NliBatch {
  inputIds: number[][];
  attentionMask: number[][];
  tokenTypeIds?: number[][];
  /** The padded length. */
  length: number;
}

/** Pads rows (of any questions) into one batch; padding is inert behind attention mask 0. */
export function nliBatch(rows: readonly NliRow[], padId: number): NliBatch {
  const length = Math.max(0, ...rows.map((r) => r.ids.length));
  const pad = (xs: readonly number[], value: number): number[] => [
    ...xs,
    ...Array<number>(length - xs.length).fill(value),
  ];
  const batch: NliBatch = {
    inputIds: rows.map((r) => pad(r.ids, padId)),
    attentionMask: rows.map((r) => pad(r.attentionMask, 0)),
    length,
  };
  if (rows.length > 0 && rows.every((r) => r.tokenTypeIds))
    batch.tokenTypeIds = rows.map((r) => pad(r.tokenTypeIds!, 0));
  return batch;
}

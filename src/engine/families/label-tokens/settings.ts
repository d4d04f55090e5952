// What the planner needs of a label-tokens folder (plain data: it crosses to the planner threads):
// the contract with its literal pieces encoded as template text (their added-token strings are the
// contract's control tokens), the chat split around the state and question segments, the label
// tables, the limits (docs/families/label-tokens.md, "Rows").
import type { LabelTable } from '../decider/labels.js';
import type { LabelContract, Placeholder, QuestionType, TemplatePart } from './contract.js';
import type { Render } from './values.js';

/** A template part as tokens: a literal piece's ids, or a placeholder. */
export type EncodedPart = { ids: number[] } | { slot: Placeholder };

export interface LabelTokensSettings {
  name: string;
  types: QuestionType[];
  render: Render;
  stateTokens: number;
  /** The chat's opening (`pre`) and the state template's pieces before {state}. */
  head: number[];
  /** The state template's pieces after {state}. */
  stateTail: number[];
  question: EncodedPart[];
  option: EncodedPart[];
  /** The chat's closing (`post`) and the assistant prefix. */
  tail: number[];
  labels: Record<QuestionType, LabelTable>;
  /** The most options of a choice question: min(max_options, the choice table's length). */
  maxOptions: number;
  noul: LabelContract['noul'];
}

/** The chat split: what the template writes before and after the user message (text). */
export interface ChatSplit {
  pre: string;
  post: string;
}

/** The settings of a checked contract; `template` encodes template text, `labels` are the built tables. */
export function labelTokensSettings(
  c: LabelContract,
  chat: ChatSplit | null,
  labels: Record<QuestionType, LabelTable>,
  template: (text: string) => number[],
): LabelTokensSettings {
  const parts = (list: readonly TemplatePart[]): EncodedPart[] =>
    list.map((p) => ('text' in p ? { ids: template(p.text) } : p));
  const at = c.state.findIndex((p) => 'slot' in p);
  const ids = (list: readonly TemplatePart[]) => parts(list).flatMap((p) => ('ids' in p ? p.ids : []));
  return {
    name: c.name,
    types: c.types,
    render: c.render,
    stateTokens: c.stateTokens,
    head: [...(chat ? template(chat.pre) : []), ...ids(c.state.slice(0, at))],
    stateTail: ids(c.state.slice(at + 1)),
    question: parts(c.question),
    option: parts(c.option),
    tail: [...(chat ? template(chat.post) : []), ...template(c.assistantPrefix)],
    labels,
    maxOptions: Math.min(c.maxOptions ?? labels.choice.ids.length, labels.choice.ids.length),
    noul: c.noul,
  };
}

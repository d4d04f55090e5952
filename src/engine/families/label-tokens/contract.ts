// A label-tokens folder's contract (docs/families/label-tokens.md, "The file"): decision.json's
// `contract` (ContractSchema, checked field by field with decision.json: a file that breaks a rule
// does not load, the error names the field), with the defaults filled in and each template cut at
// its placeholders.
import { z } from 'zod';
import { fileProblem } from '../../../protocol/index.js';
import { ModelLoadError } from '../../errors.js';
import { DEFAULT_CONTRACT_NAME } from './name.js';

export const QUESTION_TYPES = ['choice', 'noul', 'score'] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];

/** The placeholders a template may hold; any other brace is literal text. */
export const PLACEHOLDERS = ['state', 'question', 'options', 'label', 'text'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

/** A template cut at its placeholders: literal text and placeholders, in order. */
export type TemplatePart = { text: string } | { slot: Placeholder };

/** The most labels a table holds. */
export const MAX_LABELS = 255;
export const DEFAULT_STATE_TOKENS = 32_768;

const distinct = (list: readonly string[]) => new Set(list).size === list.length;

const table = z.union([
  z.literal('letters'),
  z.literal('digits'),
  z
    .array(z.string().min(1, 'a label must not be empty'))
    .min(2, 'a label list holds at least 2 strings')
    .max(MAX_LABELS, `a label list holds at most ${MAX_LABELS} strings`)
    .refine(distinct, 'the labels must be distinct'),
]);
export type TableSpec = z.infer<typeof table>;

const side = z.enum(['true', 'false']);

/** decision.json's `contract`: the templates, labels and limits of the model's prompt contract. */
export const ContractSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .default(DEFAULT_CONTRACT_NAME)
      .describe('A free name, shown in the load note and `assay models`.'),
    types: z
      .array(z.enum(QUESTION_TYPES))
      .min(1, 'name at least one question type')
      .refine((t) => distinct(t), 'each type once')
      .default([...QUESTION_TYPES])
      .describe('The question types the model answers; a question of another type is refused (422).'),
    chat: z
      .object({
        system: z.string().nullable().optional().describe('A system message’s text (absent or "": none).'),
      })
      .nullable()
      .default(null)
      .describe("null: no chat template; an object: the user message is wrapped by the folder's chat template."),
    assistant_prefix: z.string().default('').describe('Text after the rendered chat (e.g. an empty thought block).'),
    state: z.string().describe('The shared segment’s template: exactly one {state}, no other placeholder.'),
    question: z.string().describe('A question’s template: exactly one {options}, at most one {question}.'),
    option: z.string().describe('One option’s template: exactly one {label} and one {text}.'),
    render: z.enum(['text', 'json']).default('text').describe('How values become text.'),
    state_tokens: z
      .number()
      .int()
      .min(1)
      .default(DEFAULT_STATE_TOKENS)
      .describe('The state value’s tokens kept (the first ones).'),
    labels: z
      .object({
        choice: table.default('letters').describe('"letters", "digits" or a list of label strings.'),
        noul: table.default(['A', 'B']).describe('"letters", "digits" or a list of label strings.'),
        score: table.default('digits').describe('"letters", "digits" or a list of label strings.'),
      })
      .default({ choice: 'letters', noul: ['A', 'B'], score: 'digits' })
      .describe('A label table per type.'),
    max_options: z
      .number()
      .int()
      .min(2)
      .optional()
      .describe('The most options of a choice question; absent: the choice table’s length.'),
    noul: z
      .object({
        order: z
          .tuple([side, side])
          .refine(([a, b]) => a !== b, 'order names "true" and "false" once each')
          .default(['true', 'false'])
          .describe('The two options in the order written and labelled.'),
        true: z.string().default('Yes').describe('The word written for the true side.'),
        false: z.string().default('No').describe('The word written for the false side.'),
      })
      .default({ order: ['true', 'false'], true: 'Yes', false: 'No' })
      .describe('How a noul question’s two sides are written.'),
  })
  .describe('The prompt contract (docs/families/label-tokens.md, "The file").');

/** The contract with its defaults, each template cut at its placeholders. */
export interface LabelContract {
  name: string;
  types: QuestionType[];
  /** null: no chat template; else the system message's text ('' : none). */
  chat: { system: string } | null;
  assistantPrefix: string;
  state: TemplatePart[];
  question: TemplatePart[];
  option: TemplatePart[];
  render: 'text' | 'json';
  stateTokens: number;
  labels: Record<QuestionType, TableSpec>;
  /** max_options as written (undefined: the choice table's length). */
  maxOptions?: number;
  noul: { order: ['true' | 'false', 'true' | 'false']; true: string; false: string };
}

const PATTERN = new RegExp(`\\{(${PLACEHOLDERS.join('|')})\\}`);

/** A template's literal pieces and placeholders, in order. */
export function templateParts(template: string): TemplatePart[] {
  const cut = template.split(PATTERN); // text, name, text, name, …, text
  return cut
    .map((s, i) => (i % 2 === 1 ? { slot: s as Placeholder } : { text: s }))
    .filter((p) => !('text' in p) || p.text !== '');
}

/** Checks a template's placeholders: `counts` says how many of each it must hold ([min, max]); others none. */
function checked(
  template: string,
  field: string,
  counts: Partial<Record<Placeholder, [number, number]>>,
): TemplatePart[] {
  const parts = templateParts(template);
  for (const name of PLACEHOLDERS) {
    const n = parts.filter((p) => 'slot' in p && p.slot === name).length;
    const [min, max] = counts[name] ?? [0, 0];
    if (n < min || n > max) {
      const want = max === 0 ? 'no' : min === max ? `exactly ${min}` : `at most ${max}`;
      throw new Error(`${field}: holds ${n} {${name}}; it must hold ${want}`);
    }
  }
  return parts;
}

/** decision.json's `contract` (unchecked), checked; `where` names the file in errors. */
export function parseContract(value: unknown, where: string): LabelContract {
  const parsed = z.object({ contract: ContractSchema }).safeParse({ contract: value });
  if (!parsed.success) throw new ModelLoadError(fileProblem(where, parsed.error));
  return checkedContract(parsed.data.contract, where);
}

/** A contract its schema checked, with its templates checked and cut; `where` names the file in errors. */
export function checkedContract(c: z.output<typeof ContractSchema>, where: string): LabelContract {
  try {
    return {
      name: c.name,
      types: c.types,
      chat: c.chat === null ? null : { system: c.chat.system ?? '' },
      assistantPrefix: c.assistant_prefix,
      state: checked(c.state, 'contract.state', { state: [1, 1] }),
      question: checked(c.question, 'contract.question', { options: [1, 1], question: [0, 1] }),
      option: checked(c.option, 'contract.option', { label: [1, 1], text: [1, 1] }),
      render: c.render,
      stateTokens: c.state_tokens,
      labels: c.labels,
      ...(c.max_options === undefined ? {} : { maxOptions: c.max_options }),
      noul: c.noul,
    };
  } catch (error) {
    throw new ModelLoadError(`${where}: ${(error as Error).message}`);
  }
}

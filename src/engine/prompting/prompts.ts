// The wording of every prompt, in one place, versioned: a model manifest (assay.json) may pin
// `prompt_version` so that wording can be tuned per model once a real model is measured, and
// `assay eval --dataset --compare v1,letters` measures which works better on the user's data.
// The question keys chosen by the caller never appear here.
//
// Versions (label strategies):
//   v1       options are answered by their own names (a name may take several tokens).
//   letters  options are listed as A. B. C. ... and answered by their letter: one token each,
//            whatever the names (node-llama-cpp's Structured Decisions and the public Python
//            adapter label options this way). noul and score read as in v1.
import { renderContent } from './content.js';
import type { Content, Question } from '../types.js';

/** A choice question's options in the order the prompt lists them: name and description. */
export type OptionList = ReadonlyArray<readonly [string, Content | null]>;

/**
 * The options of a choice question: `listed` when given (the order sent, or a rotation of it:
 * plan.ts), else the criteria's own key order (which lists integer-like names first, ascending).
 */
function optionsOf(question: Question & { type: 'choice' }, listed: OptionList | undefined): OptionList {
  return listed ?? Object.entries(question.criteria);
}

export interface PromptSet {
  /** The system turn: shared by every question of a request, so its tokens are the reusable prefix. */
  system(stateText: string): string;
  /** The user turn for one question (ContentTooLarge past `maxChars` of rendered content); a choice's options as `listed`. */
  user(question: Question, maxChars?: number, listed?: OptionList): string;
  /** The answers the model may give, in the order of the answer's outcomes (a choice's: `listed`'s order). */
  labels(question: Question, listed?: OptionList): string[];
}

const v1: PromptSet = {
  system: (state) =>
    'You are a careful evaluator. Read the content below, then answer the question that follows ' +
    'with exactly one of the allowed answers and nothing else.\n\n' +
    `Content:\n${state}`,

  user(question, maxChars, listed) {
    const render = (value: Parameters<typeof renderContent>[0]) => renderContent(value, maxChars);
    const instructions = render(question.instructions);
    const lines = [`Question: ${instructions}`];
    if (question.type === 'noul') {
      const yes = render(question.criteria?.true);
      const no = render(question.criteria?.false);
      if (yes) lines.push(`Answer Yes if: ${yes}`);
      if (no) lines.push(`Answer No if: ${no}`);
      lines.push('Answer with Yes or No.');
    } else if (question.type === 'choice') {
      lines.push('Options:');
      for (const [option, description] of optionsOf(question, listed)) {
        const text = render(description);
        lines.push(text ? `- ${option}: ${text}` : `- ${option}`);
      }
      lines.push('Answer with the name of one option, exactly as written.');
    } else {
      lines.push('Levels:');
      question.criteria.forEach((description, level) => lines.push(`${level}: ${render(description)}`));
      lines.push('Answer with the number of one level.');
    }
    return lines.join('\n');
  },

  labels(question, listed) {
    if (question.type === 'noul') return ['Yes', 'No'];
    if (question.type === 'choice') return optionsOf(question, listed).map(([option]) => option);
    return question.criteria.map((_, level) => String(level));
  },
};

/** The label of the option at `index`: A … Z, then AA, AB … (255 options at most: up to IU). */
export function optionLetter(index: number): string {
  const A = 'A'.charCodeAt(0);
  return index < 26
    ? String.fromCharCode(A + index)
    : String.fromCharCode(A + Math.floor(index / 26) - 1, A + (index % 26));
}

const letters: PromptSet = {
  system: v1.system,

  user(question, maxChars, listed) {
    if (question.type !== 'choice') return v1.user(question, maxChars);
    const lines = [`Question: ${renderContent(question.instructions, maxChars)}`, 'Options:'];
    optionsOf(question, listed).forEach(([option, description], i) => {
      const text = renderContent(description, maxChars);
      lines.push(text ? `${optionLetter(i)}. ${option}: ${text}` : `${optionLetter(i)}. ${option}`);
    });
    lines.push('Answer with the letter of one option.');
    return lines.join('\n');
  },

  labels(question, listed) {
    if (question.type !== 'choice') return v1.labels(question);
    return optionsOf(question, listed).map((_, i) => optionLetter(i));
  },
};

const PROMPTS: Record<string, PromptSet> = { v1, letters };
export const PROMPT_VERSIONS = Object.keys(PROMPTS);
export const DEFAULT_PROMPT_VERSION = 'v1';

export function promptSet(version: string = DEFAULT_PROMPT_VERSION): PromptSet {
  const set = PROMPTS[version];
  if (!set)
    throw new Error(`unknown prompt_version ${JSON.stringify(version)}; known: ${Object.keys(PROMPTS).join(', ')}`);
  return set;
}

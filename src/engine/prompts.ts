// The wording of every prompt, in one place, versioned: a model manifest (assay.json) may pin
// `prompt_version` so that wording can be tuned per model once a real model is measured.
// The question keys chosen by the caller never appear here (SPEC §1.8).
import { renderContent } from './content.js';
import type { Question } from './types.js';

export interface PromptSet {
  /** The system turn: shared by every question of a request, so its tokens are the reusable prefix. */
  system(stateText: string): string;
  /** The user turn for one question (ContentTooLarge past `maxChars` of rendered content). */
  user(question: Question, maxChars?: number): string;
  /** The answers the model may give, in the order of the answer's outcomes. */
  labels(question: Question): string[];
}

const v1: PromptSet = {
  system: (state) =>
    'You are a careful evaluator. Read the content below, then answer the question that follows ' +
    'with exactly one of the allowed answers and nothing else.\n\n' +
    `Content:\n${state}`,

  user(question, maxChars) {
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
      for (const [option, description] of Object.entries(question.criteria)) {
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

  labels(question) {
    if (question.type === 'noul') return ['Yes', 'No'];
    if (question.type === 'choice') return Object.keys(question.criteria);
    return question.criteria.map((_, level) => String(level));
  },
};

const PROMPTS: Record<string, PromptSet> = { v1 };
export const DEFAULT_PROMPT_VERSION = 'v1';

export function promptSet(version: string = DEFAULT_PROMPT_VERSION): PromptSet {
  const set = PROMPTS[version];
  if (!set) throw new Error(`unknown prompt_version ${JSON.stringify(version)}; known: ${Object.keys(PROMPTS).join(', ')}`);
  return set;
}

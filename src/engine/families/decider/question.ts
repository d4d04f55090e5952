// A question as the decider contract asks it (docs/families/decider-labels.md): its question text
// and option texts, or, for a score question, one isolated yes/no question per level. The rules of
// the authors' request adapter (Mapika/decider decider/systemone.py: render_question,
// isolated_rows), written from their description.
import { BudgetError } from '../../errors.js';
import type { Content } from '../../types.js';
import { pyJsonDumps } from '../shared/pyjson.js';
import type { FamilyQuestion } from '../shared/question.js';

/** Most options of a choice question (the wide label table's size). */
export const MAX_CHOICE = 255;
/** Most levels of a score question. */
export const MAX_LEVELS = 10;
/** The question text of a noul question sent without instructions (its criteria say what is asked). */
export const NOUL_WITHOUT_INSTRUCTIONS = 'Which answer fits the context?';

/** A refusal of the decider contract (422): what the model cannot be asked, and the limit. */
export class DeciderRefusal extends BudgetError {
  constructor(count: number, limit: number, message: string) {
    super('context', count, limit, false, message);
    this.name = 'DeciderRefusal';
  }
}

/** A value as the contract writes it: a string verbatim, anything else as Python's JSON (non-ASCII kept). */
export function asText(value: Content | null | undefined): string {
  return typeof value === 'string' ? value : pyJsonDumps(value ?? null);
}

// Python's `\s` and `\d` on str: Unicode whitespace (str.isspace) and decimal digits (Nd).
const PY_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const LEVEL_NUMBER = new RegExp(`^${PY_SPACE}*-?\\p{Nd}+${PY_SPACE}*:${PY_SPACE}*`, 'u');

/** A score level without a leading number ("2: somewhat" → "somewhat"): an isolated level must not carry one. */
export function stripLevelNumber(text: string): string {
  return text.replace(LEVEL_NUMBER, '');
}

/** One question the model reads: its text and its options, labelled in order. */
export interface AskedRow {
  question: string;
  options: string[];
  /** The score level this row judges (isolated rows). */
  level?: number;
}

function instructionsOf(q: FamilyQuestion): string {
  const raw = q.instructions;
  if (q.type === 'noul' && (raw === undefined || raw === null || raw === '')) {
    const c = q.criteria ?? {};
    const described = [c.true, c.false].some((d) => d !== undefined && d !== null && d !== '');
    if (!described)
      throw new DeciderRefusal(
        0,
        1,
        'a noul question without instructions needs criteria that describe true or false (this model is asked by them)',
      );
    return NOUL_WITHOUT_INSTRUCTIONS;
  }
  // A missing value is refused; an explicit null is the text `null`, as the authors' adapter writes it.
  const text = raw === undefined ? '' : asText(raw);
  if (text === '')
    throw new DeciderRefusal(0, 1, 'this model needs the question’s instructions: send a non-empty text');
  return text;
}

/** The rows of one question: one for noul and choice, one isolated yes/no row per score level. */
export function askedRows(q: FamilyQuestion): AskedRow[] {
  const question = instructionsOf(q);
  if (q.type === 'noul') {
    const c = q.criteria ?? {};
    const side = (name: string, d: Content | null | undefined) =>
      d === undefined || d === null || d === '' ? name : `${name}: ${asText(d)}`;
    return [{ question, options: [side('no', c.false), side('yes', c.true)] }];
  }
  if (q.type === 'choice') {
    const n = q.options.length;
    if (n < 2 || n > MAX_CHOICE)
      throw new DeciderRefusal(
        n,
        n < 2 ? 2 : MAX_CHOICE,
        `this model answers a choice question of 2 to ${MAX_CHOICE} options; this one has ${n}`,
      );
    return [
      {
        question,
        options: q.options.map(([name, d]) => (d === null || d === '' ? name : `${name}: ${asText(d)}`)),
      },
    ];
  }
  const n = q.criteria.length;
  if (n < 2 || n > MAX_LEVELS)
    throw new DeciderRefusal(
      n,
      MAX_LEVELS,
      `this model answers a score question of 2 to ${MAX_LEVELS} levels; this one has ${n}`,
    );
  return q.criteria.map((level, j) => ({
    question: `${question}\nProposed answer: ${stripLevelNumber(asText(level))}\nDoes the proposed answer fit?`,
    options: ['no', 'yes'],
    level: j,
  }));
}

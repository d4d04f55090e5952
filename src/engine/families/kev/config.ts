// A Kev folder's settings: decision.json (the layout id, the delimiter and pad tokens by id or by
// string, the row limits) and calibration.json (the head's temperature, fitted by the authors and
// stored in head.pt; the peer writes it as `{"temperature": [t_choice, t_score, t_noul]}` or one
// number for every type). Missing settings take Kev's published values (docs/families/kev-pointer.md).
import { ModelLoadError } from '../../errors.js';
import type { KevLayoutConfig, KevSpecials } from './layout.js';

/** Kev's delimiters (Qwen tokens it reuses) and pad, by string: decision.json may name them so. */
export const KEV_TOKENS: Readonly<Record<keyof KevSpecials, string>> = {
  state: '<|fim_prefix|>',
  question: '<|fim_middle|>',
  optionOpen: '<|box_start|>',
  optionClose: '<|box_end|>',
  decide: '<|fim_suffix|>',
  pad: '<|endoftext|>',
};

/** decision.json's key of each special token. */
const DECISION_KEYS: Readonly<Record<keyof KevSpecials, string>> = {
  state: 'state',
  question: 'question',
  optionOpen: 'option_open',
  optionClose: 'option_close',
  decide: 'decide',
  pad: 'pad',
};

/**
 * Kev's serving limits: 8,192 state tokens (its <state> token included), and a row of the state and
 * at most 8,192 tokens of one question's branch (the authors' SERVE_MAX_BRANCH = SERVE_MAX_STATE +
 * 8192; an earlier commit had 8,192 for the whole row, which leaves a state at the cut no room:
 * decision.json's max_row_tokens sets it).
 */
export const KEV_MAX_STATE = 8192;
export const KEV_MAX_ROW = KEV_MAX_STATE + 8192;

export interface KevTemperatures {
  choice: number;
  score: number;
  noul: number;
}

export interface KevConfig extends KevLayoutConfig {
  temperatures: KevTemperatures;
  /** Where each setting came from (the load notes). */
  notes: string[];
}

function positiveInt(v: unknown, fallback: number, what: string): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 2)
    throw new ModelLoadError(`decision.json: ${what} must be an integer of at least 2 (got ${JSON.stringify(v)})`);
  return v;
}

function temperature(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw new ModelLoadError(`calibration.json: ${where} must be a positive number (got ${JSON.stringify(v)})`);
  return v;
}

/** The temperatures: a number for every type, or [choice, score, noul]; absent: 1 (raw scores). */
export function readTemperatures(calibration: Record<string, unknown> | undefined): {
  temperatures: KevTemperatures;
  note: string;
} {
  const t = calibration?.temperature;
  if (t === undefined)
    return { temperatures: { choice: 1, score: 1, noul: 1 }, note: 'no calibration.json temperature: T = 1' };
  if (typeof t === 'number') {
    const x = temperature(t, 'temperature');
    return { temperatures: { choice: x, score: x, noul: x }, note: `temperature ${x} (calibration.json)` };
  }
  if (!Array.isArray(t) || t.length !== 3)
    throw new ModelLoadError('calibration.json: temperature must be a number or [choice, score, noul]');
  const [choice, score, noul] = t.map((x, i) => temperature(x, `temperature[${i}]`)) as [number, number, number];
  const note = `temperatures choice ${choice}, score ${score}, noul ${noul} (calibration.json)`;
  const extra = calibration?.temperature_by_options !== undefined ? '; temperature_by_options is not read' : '';
  return { temperatures: { choice, score, noul }, note: note + extra };
}

/**
 * The folder's settings. `idOf` gives a token string's id in the tokenizer (undefined: not there);
 * decision.json's special_tokens give ids (numbers) or token strings, else Kev's own strings.
 */
export function readKevConfig(
  decision: Record<string, unknown> | undefined,
  calibration: Record<string, unknown> | undefined,
  idOf: (token: string) => number | undefined,
): KevConfig {
  const given = (decision?.special_tokens ?? {}) as Record<string, unknown>;
  const specials = {} as KevSpecials;
  for (const key of Object.keys(KEV_TOKENS) as Array<keyof KevSpecials>) {
    const v = given[DECISION_KEYS[key]] ?? KEV_TOKENS[key];
    const id = typeof v === 'number' ? v : typeof v === 'string' ? idOf(v) : undefined;
    if (id === undefined || !Number.isInteger(id) || id < 0)
      throw new ModelLoadError(
        `${DECISION_KEYS[key]} token ${JSON.stringify(v)} is not in tokenizer.json (decision.json special_tokens)`,
      );
    specials[key] = id;
  }
  const maxState = positiveInt(decision?.max_state_tokens, KEV_MAX_STATE, 'max_state_tokens');
  const maxRow = positiveInt(decision?.max_row_tokens, KEV_MAX_ROW, 'max_row_tokens');
  const { temperatures, note } = readTemperatures(calibration);
  return {
    specials,
    maxState,
    maxRow,
    temperatures,
    notes: [`rows of at most ${maxRow} tokens, states cut at ${maxState - 1}`, note],
  };
}

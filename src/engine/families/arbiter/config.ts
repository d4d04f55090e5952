// What the Arbiter family reads of a model folder besides the tokenizer and the graph
// (docs/families/arbiter-fixed.md, "The folder"):
//   decision.json     {"layout": "arbiter-fixed-v1", "pad_token_id" (Gemma's <pad>, 0), "max_len"?}
//   calibration.json  {"temperature": [t_choice, t_score, t_noul]} (v3.3 ships [1, 1, 1]); absent: 1.
import { ModelLoadError } from '../../errors.js';
import type { Question } from '../../types.js';
import { SLOTS } from './layout.js';

/** The row length when decision.json gives none: Gemma 3 4B's context (the reference cuts nothing). */
export const ARBITER_MAX_LEN = 131_072;

export interface ArbiterConfig {
  padId: number;
  maxLen: number;
  temperature: { choice: number; score: number; noul: number };
}

function object(json: unknown, file: string): Record<string, unknown> {
  if (json === undefined || json === null) return {};
  if (typeof json !== 'object' || Array.isArray(json)) throw new ModelLoadError(`${file}: expected an object`);
  return json as Record<string, unknown>;
}

function count(v: unknown, what: string, fallback?: number): number {
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new ModelLoadError(`${what}: expected a non-negative integer`);
  return v;
}

export function readArbiterConfig(decision: unknown, calibration: unknown): ArbiterConfig {
  const d = object(decision, 'decision.json');
  const c = object(calibration, 'calibration.json');
  const t = c.temperature ?? [1, 1, 1];
  const temps = typeof t === 'number' ? [t, t, t] : t;
  if (!Array.isArray(temps) || temps.length !== 3 || temps.some((x) => typeof x !== 'number' || !(x > 0)))
    throw new ModelLoadError('calibration.json: temperature: expected [t_choice, t_score, t_noul], each > 0');
  const [choice, score, noul] = temps as [number, number, number];
  return {
    padId: count(d.pad_token_id, 'decision.json: pad_token_id', 0),
    maxLen: count(d.max_len, 'decision.json: max_len', ARBITER_MAX_LEN),
    temperature: { choice, score, noul },
  };
}

/** The question's slots of a row's 24 scores (`options`: a choice's count), calibrated: softmax(scores[slots] / T); noul [P(true), P(false)]. */
export function slotProbabilities(
  type: Question['type'],
  scores: readonly number[],
  options: number,
  temperature: ArbiterConfig['temperature'],
): number[] {
  const k = type === 'noul' ? 2 : type === 'score' ? SLOTS.levels : options;
  const from = type === 'noul' ? SLOTS.noul : type === 'score' ? SLOTS.score : SLOTS.choice;
  const z = scores.slice(from, from + k).map((x) => x / temperature[type]);
  const m = Math.max(...z);
  const e = z.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

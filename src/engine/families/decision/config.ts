// What the Decision family reads of a model folder besides the tokenizer and the graph
// (docs/families/decision-endpoint.md, "The folder"):
//   decision.json     {"layout": "decision-endpoint-v1", "pad_token_id", "max_len"?, "max_options"?,
//                      "max_levels"?, "choice_null_description"?: "null" | "key"}
//   calibration.json  {"temperature": [t_choice, t_score, t_noul]} (the released temperature, one
//                      for every type); absent: 1.
import { ModelLoadError } from '../../errors.js';
import type { DecisionLayoutConfig } from './layout.js';

/** The published limits: rows of 16,384 tokens, choice 2..255, score 2..10. */
export const DECISION_LIMITS = { maxLen: 16_384, maxOptions: 255, maxLevels: 10 } as const;

export interface DecisionConfig extends DecisionLayoutConfig {
  padId: number;
  /** The head's temperature per type. */
  temperature: { choice: number; score: number; noul: number };
}

function object(json: unknown, file: string): Record<string, unknown> {
  if (json === undefined || json === null) return {};
  if (typeof json !== 'object' || Array.isArray(json)) throw new ModelLoadError(`${file}: expected an object`);
  return json as Record<string, unknown>;
}

function positiveInt(v: unknown, what: string, fallback?: number): number {
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new ModelLoadError(`${what}: expected a non-negative integer`);
  return v;
}

/** The folder's settings from decision.json and calibration.json (parsed; calibration may be absent). */
export function readDecisionConfig(decision: unknown, calibration: unknown): DecisionConfig {
  const d = object(decision, 'decision.json');
  const c = object(calibration, 'calibration.json');
  const nullDescription = d.choice_null_description ?? 'null';
  if (nullDescription !== 'null' && nullDescription !== 'key')
    throw new ModelLoadError('decision.json: choice_null_description: expected "null" or "key"');
  const t = c.temperature ?? [1, 1, 1];
  const temps = typeof t === 'number' ? [t, t, t] : t;
  if (!Array.isArray(temps) || temps.length !== 3 || temps.some((x) => typeof x !== 'number' || !(x > 0)))
    throw new ModelLoadError('calibration.json: temperature: expected [t_choice, t_score, t_noul], each > 0');
  const [choice, score, noul] = temps as [number, number, number];
  return {
    padId: positiveInt(d.pad_token_id, 'decision.json: pad_token_id'),
    maxLen: positiveInt(d.max_len, 'decision.json: max_len', DECISION_LIMITS.maxLen),
    maxOptions: positiveInt(d.max_options, 'decision.json: max_options', DECISION_LIMITS.maxOptions),
    maxLevels: positiveInt(d.max_levels, 'decision.json: max_levels', DECISION_LIMITS.maxLevels),
    choiceNullDescription: nullDescription,
    temperature: { choice, score, noul },
  };
}

/** Calibrated probabilities of a row's candidate logits: softmax(logits / T). */
export function calibrated(logits: readonly number[], t: number): number[] {
  const z = logits.map((x) => x / t);
  const m = Math.max(...z);
  const e = z.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

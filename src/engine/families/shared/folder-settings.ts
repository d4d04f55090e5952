// Reading a causal-row family's own settings files (decision.json, calibration.json as the closest
// peer server writes them): an object or nothing, non-negative integers with a default, the
// temperatures per type, and softmax(logits / T). Shared by decision/ and arbiter/; the
// calibration file's name by every family that reads one.
import { ModelLoadError } from '../../errors.js';

/** The calibration file of every family that has one (the closest peer server's name). */
export const CALIBRATION_FILE = 'calibration.json';

/** Temperatures per question type. */
export interface TypeTemperatures {
  choice: number;
  score: number;
  noul: number;
}

/** A parsed settings file as an object (absent: empty); anything else fails the load naming `file`. */
export function settingsObject(json: unknown, file: string): Record<string, unknown> {
  if (json === undefined || json === null) return {};
  if (typeof json !== 'object' || Array.isArray(json)) throw new ModelLoadError(`${file}: expected an object`);
  return json as Record<string, unknown>;
}

/** A non-negative integer setting; `fallback` when absent (no fallback: required). */
export function nonNegativeInt(v: unknown, what: string, fallback?: number): number {
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new ModelLoadError(`${what}: expected a non-negative integer`);
  return v;
}

/** calibration.json's `temperature`: one number for every type, or [t_choice, t_score, t_noul]; absent: 1. */
export function typeTemperatures(calibration: Record<string, unknown>): TypeTemperatures {
  const t = calibration.temperature ?? [1, 1, 1];
  const temps = typeof t === 'number' ? [t, t, t] : t;
  if (!Array.isArray(temps) || temps.length !== 3 || temps.some((x) => typeof x !== 'number' || !(x > 0)))
    throw new ModelLoadError(`${CALIBRATION_FILE}: temperature: expected [t_choice, t_score, t_noul], each > 0`);
  const [choice, score, noul] = temps as [number, number, number];
  return { choice, score, noul };
}

/** Calibrated probabilities of a row's logits: softmax(logits / T). */
export function softmaxAt(logits: readonly number[], t: number): number[] {
  const z = logits.map((x) => x / t);
  const m = Math.max(...z);
  const e = z.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

// The Laya head's readout: rl_agent_config.json (limits and calibration temperatures), the
// temperature of a question by its type and option count, clamped as the reference clamps it, and
// the marker logits → probabilities → the numbers an answer is made of (the answer's shape is the
// engine's shared builder's: docs/families/laya-markers.md).
import { softmax } from '../../../common/index.js';
import { ModelLoadError } from '../../errors.js';
import { answerConfidence, type ConfidenceKind } from '../../execution/answers.js';
import { LAYA_QTYPE, type LayaLimits } from './layout.js';

type QType = keyof typeof LAYA_QTYPE;

/** The reference's bounds on an applied temperature (laya/common.py TEMP_MIN / TEMP_MAX). */
export const LAYA_TEMPERATURE_BOUNDS = [0.5, 5] as const;

export interface LayaCalibration {
  /** Per type, clamped: [choice, score, noul] (`temperature`; [1, 1, 1] when absent). */
  temperature: readonly [number, number, number];
  /** Per "<type>:<2|3-5|6-10|11+>" bucket, clamped (`temperature_by_options`). */
  byOptions: ReadonlyMap<string, number>;
  /** The entries whose shipped value was not applied as is: `name=raw -> applied`, for a load warning. */
  clamped: string[];
}

export interface LayaConfig extends LayaLimits {
  calibration: LayaCalibration;
}

/**
 * A usable temperature, as the reference's clamp_temperature: what Python's float() makes of the
 * value (a number, a boolean, a numeric string), confined to [0.5, 5]; 1.0 when it is not a finite
 * number. The shipped `choice:11+` of 0.1006 would sharpen the logits ten times: it becomes 0.5.
 */
export function clampTemperature(value: unknown): number {
  const t = pyFloat(value);
  if (t === undefined || !Number.isFinite(t)) return 1;
  return Math.min(LAYA_TEMPERATURE_BOUNDS[1], Math.max(LAYA_TEMPERATURE_BOUNDS[0], t));
}

/** Python's float() of a JSON value, or undefined where it raises. */
function pyFloat(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (/^[+-]?(inf|infinity|nan)$/i.test(s)) return Number.NaN; // not finite: the reference falls back to 1.0
  const digits = String.raw`\d(?:_?\d)*`;
  const number = new RegExp(`^[+-]?(?:${digits}(?:\\.(?:${digits})?)?|\\.${digits})(?:[eE][+-]?${digits})?$`);
  return number.test(s) ? Number(s.replace(/_/g, '')) : undefined;
}

/** The temperature bucket of a question: "<type>:<2|3-5|6-10|11+>" by its option count. */
export function temperatureBucket(type: QType, options: number): string {
  const size = options <= 2 ? '2' : options <= 5 ? '3-5' : options <= 10 ? '6-10' : '11+';
  return `${type}:${size}`;
}

/** Laya's limits and calibration: its presence makes a folder a Laya model (descriptor.ts). */
export const LAYA_CONFIG = 'rl_agent_config.json';

/** rl_agent_config.json's parts the layout and the readout use. `file` names it in errors. */
export function readLayaConfig(json: unknown, file = LAYA_CONFIG): LayaConfig {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new ModelLoadError(`${file}: expected an object`);
  const cfg = json as Record<string, unknown>;
  const limit = (key: string, fallback: number): number => {
    const v = cfg[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      throw new ModelLoadError(`${file}: ${key}: expected a positive integer`);
    return v;
  };
  const maxLen = limit('max_len', 512);
  const headMaxLen = limit('head_max_len', 192);
  const raw = cfg.temperature ?? [1, 1, 1];
  if (!Array.isArray(raw) || raw.length !== 3)
    throw new ModelLoadError(`${file}: temperature: expected [t_choice, t_score, t_noul]`);
  const rawByOptions = cfg.temperature_by_options ?? {};
  if (!rawByOptions || typeof rawByOptions !== 'object' || Array.isArray(rawByOptions))
    throw new ModelLoadError(`${file}: temperature_by_options: expected an object`);

  const clamped: string[] = [];
  const apply = (name: string, v: unknown): number => {
    const t = clampTemperature(v);
    if (t !== pyFloat(v)) clamped.push(`${name}=${JSON.stringify(v)} -> ${t}`);
    return t;
  };
  const byOptions = new Map(Object.entries(rawByOptions as Record<string, unknown>).map(([k, v]) => [k, apply(k, v)]));
  const temperature = raw.map((v: unknown, i) => apply(`temperature[${i}]`, v)) as [number, number, number];
  return { maxLen, headMaxLen, calibration: { temperature, byOptions, clamped } };
}

/** The temperature the reference applies to a question: its bucket's, else its type's. */
export function layaTemperature(cal: LayaCalibration, type: QType, options: number): number {
  return cal.byOptions.get(temperatureBucket(type, options)) ?? cal.temperature[LAYA_QTYPE[type]];
}

/**
 * The numbers a question's answer is made of (SPEC 2.4), from its markers' raw logits:
 * - choice: `probabilities` per option in marker order, `best` the option chosen (the first of equal
 *   ones), `confidence`;
 * - score: `probabilities` per level, `score` = Σ level · p(level), `confidence`;
 * - noul: `noul` = P(true), the second of the [false, true] pair (no confidence on a noul answer).
 * `confidence` is the engine's formula for choice and score answers (answers.ts; 'entropy',
 * 1 − H/ln K, is also the authors' confidence_from_probs).
 */
export function layaReadout(
  type: QType,
  logits: readonly number[],
  cal: LayaCalibration,
  kind: ConfidenceKind = 'entropy',
): {
  bucket: string;
  temperature: number;
  probabilities: number[];
  best: number;
  score?: number;
  noul?: number;
  confidence?: number;
} {
  const temperature = layaTemperature(cal, type, logits.length);
  const probabilities = softmax(logits, temperature);
  let best = 0;
  probabilities.forEach((p, i) => {
    if (p > probabilities[best]!) best = i;
  });
  const out = { bucket: temperatureBucket(type, logits.length), temperature, probabilities, best };
  if (type === 'noul') return { ...out, noul: probabilities[1] ?? 0 };
  const confidence = answerConfidence(type, probabilities, kind);
  if (type === 'choice') return { ...out, confidence };
  return { ...out, score: probabilities.reduce((s, p, i) => s + i * p, 0), confidence };
}

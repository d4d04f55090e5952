// What every benchmark section receives and returns.
import { ensureSynthModel, type ShapeName, type SynthDtype } from '../../src/internal.js';

export interface BenchContext {
  /** `--quick`: smaller states, fewer rounds (each section says what it shrank). */
  quick: boolean;
  /** onnxruntime intra-op threads for every session (2 on this 2-core machine). */
  threads: number;
  log: (line: string) => void;
  /** The folder of a synthetic model, generated (with progress lines) if missing. */
  model(shape: ShapeName, dtype: SynthDtype): Promise<string>;
}

export interface Target {
  name: string;
  goal: string;
  /** The measured figure the verdict is about. */
  value: number;
  unit: string;
  met: boolean;
  detail?: string;
}

export interface SectionResult {
  id: string;
  title: string;
  /** Model, sizes, rounds: what was run. */
  config: Record<string, unknown>;
  results: unknown;
  targets: Target[];
  notes: string[];
  /** Markdown body (tables) for the summary. */
  markdown: string;
  seconds: number;
}

export function createContext(opts: { quick: boolean; threads?: number; log?: (line: string) => void }): BenchContext {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  return {
    quick: opts.quick,
    threads: opts.threads ?? 2,
    log,
    model: (shape, dtype) => ensureSynthModel({ shape, dtype, log: (l) => log(`  [models] ${l}`) }),
  };
}

/** A markdown table. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const line = (cells: Array<string | number>) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** "1234 ms (1200–1300)" style: median with min–max. */
export function ms(s: { median: number; min: number; max: number }): string {
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  return s.min === s.max ? `${f(s.median)} ms` : `${f(s.median)} ms (${f(s.min)}–${f(s.max)})`;
}

export function ratio(r: { median: number; p10: number; p90: number }): string {
  return r.p10 === r.p90
    ? `${r.median.toFixed(2)}×`
    : `${r.median.toFixed(2)}× (${r.p10.toFixed(2)}–${r.p90.toFixed(2)})`;
}

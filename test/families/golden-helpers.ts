// What the families' golden tests share: the goldens files (test/families/*/goldens.json, made
// by tools/families/*-goldens.ts from the Python references), a golden request as a layout and as
// the engine take it, the checks of a refusal and of a readout, the live rerun of a reference,
// and the Python that runs the references' readout and forward passes.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { failureOf, rebuild } from '../../src/engine/thread/failure.js';
import type { Answer, EvaluateRequest, Question } from '../../src/engine/types.js';
import { PYTHON } from './replica-helpers.js';

/** The families' tools: tools/families/<family>/ (its replica, goldens generator and Python reference) and kit/ (shared). */
export const FAMILY_TOOLS = join(import.meta.dirname, '..', '..', 'tools', 'families');

/** A Python reference by its file name, in its family's folder or the shared kit. */
export function reference(file: string): string {
  for (const folder of readdirSync(FAMILY_TOOLS)) {
    const path = join(FAMILY_TOOLS, folder, file);
    if (existsSync(path)) return path;
  }
  throw new Error(`no Python reference ${file} under ${FAMILY_TOOLS}`);
}

/** The folder of a Python reference module, for `sys.path` (its `readout` imported by name). */
export const referenceDir = (module: string): string => dirname(reference(`${module}.py`));

/** A golden request as the goldens file holds it: a choice's criteria are [name, description] pairs. */
export interface GoldenRequest {
  name: string;
  state: unknown;
  question: { type: Question['type']; criteria?: unknown };
}

/** A goldens file: its requests and the reference's results, in the same order. */
export interface Goldens<R extends GoldenRequest = GoldenRequest, S = Record<string, any>> {
  requests: R[];
  results: S[];
}

/** A goldens file, parsed. */
export function readGoldens<G>(file: string): G {
  return JSON.parse(readFileSync(file, 'utf8')) as G;
}

/** Cases issue 37 names that both families' goldens hold (each family's own follow in its test). */
export const ISSUE_37_CASES = [
  'choice one option',
  'choice 10 options',
  'choice 26 options',
  'choice 255 options',
  'score 2 levels',
  'score 10 levels',
  'noul plain',
  'object state',
  'array state',
  'noul criteria object',
  'CJK state',
];

// ------------------------------------------------------------------ a layout and its readout

/** [name, index] of each golden request, for it.each. */
export function goldenCases(goldens: Goldens): Array<readonly [string, number]> {
  return goldens.requests.map((r, i) => [r.name, i] as const);
}

/** [name, index] of each golden request whose result has a readout (of its fake logits). */
export function readoutCases(goldens: Goldens): Array<readonly [string, number]> {
  return goldenCases(goldens).filter(([, i]) => goldens.results[i]!.readout);
}

/** What the layout must give for request `i`: its result without the name and the readout. */
export function layoutResult(goldens: Goldens, i: number): Record<string, unknown> {
  const { name: _name, readout: _readout, ...rest } = goldens.results[i]!;
  return rest;
}

/** A golden request's question as a family layout takes it: a choice's pairs as its options. */
export function layoutQuestion<Q>(r: GoldenRequest): Q {
  const q = r.question as any;
  return (q.type === 'choice' ? { type: 'choice', instructions: q.instructions, options: q.criteria } : q) as Q;
}

/** What `f` throws (undefined when it returns). */
export function thrownBy(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** A refusal crosses threads (planner, engine thread) as a BudgetError with its message: the API's 422. */
export function expectCrossesAsBudgetError(thrown: unknown): void {
  const crossed = rebuild(failureOf(thrown));
  expect(crossed).toBeInstanceOf(BudgetError);
  expect(crossed.message).toBe((thrown as Error).message);
  expect((crossed as BudgetError).budget).toBe('context');
}

/** The numbers a reference readout gives. */
export interface ReadoutNumbers {
  probabilities: number[];
  noul?: number;
  score?: number;
  confidence?: number;
}

/** A readout's probabilities, score, noul and confidence equal the reference's within `tolerance`. */
export function expectReadoutWithin(got: ReadoutNumbers, want: ReadoutNumbers, tolerance: number): void {
  expect(got.probabilities).toHaveLength(want.probabilities.length);
  got.probabilities.forEach((p, j) => expect(Math.abs(p - want.probabilities[j]!)).toBeLessThan(tolerance));
  for (const key of ['score', 'noul', 'confidence'] as const) {
    expect(got[key] === undefined).toBe(want[key] === undefined);
    if (want[key] !== undefined) expect(Math.abs(got[key]! - want[key])).toBeLessThan(tolerance);
  }
}

/** For each changed rule, a test: under it, the layout of some golden request differs from the goldens. */
export function itNoticesRuleChanges<R extends GoldenRequest, C>(
  goldens: Goldens<R>,
  changes: Array<[string, C]>,
  layout: (r: R, change: C) => unknown,
): void {
  it.each(changes)('%s', (_name, change) => {
    const changed = goldenCases(goldens).filter(
      // Compared as values (a layout's keys may come in another order than the goldens' file).
      ([, i]) =>
        !isDeepStrictEqual(JSON.parse(JSON.stringify(layout(goldens.requests[i]!, change))), layoutResult(goldens, i)),
    );
    expect(changed.length).toBeGreaterThan(0);
  });
}

/** For each golden result with a readout, a test: `check` holds the family's readout of the request's fake logits to it. */
export function itEachReadout<R extends GoldenRequest>(goldens: Goldens<R>, check: (r: R, want: any) => void): void {
  it.each(readoutCases(goldens))('%s', (_name, i) => check(goldens.requests[i]!, goldens.results[i]!.readout));
}

/**
 * The goldens are current: the generator still makes the same requests, and the reference run now
 * gives the same results for a spread of them (every ninth, the refusals, the limits, the special
 * strings). Skipped, with a warning, without PYTHON.
 */
export function describeLiveReference<R extends GoldenRequest>(
  family: string,
  goldens: Goldens<R>,
  reference: () => { requests: () => R[]; run: (picked: R[]) => Array<Record<string, unknown>> },
): void {
  describe.skipIf(!existsSync(PYTHON))(`the reference, run live (${PYTHON})`, () => {
    const ref = reference();
    it('the generator makes the stored requests', () => {
      expect(JSON.parse(JSON.stringify(ref.requests()))).toEqual(goldens.requests);
    }, 120_000);

    it('gives the stored results', () => {
      const picked = goldens.requests.filter(
        (r, i) => i % 9 === 0 || goldens.results[i]!.refused || r.name.includes('limit') || r.name.includes('special'),
      );
      expect(picked.length).toBeGreaterThanOrEqual(20);
      const fresh = ref.run(picked);
      for (const result of fresh) expect(result).toEqual(goldens.results.find((g) => g.name === result.name));
    }, 120_000);
  });
  if (!existsSync(PYTHON)) console.warn(`${PYTHON} not found: the live run of the ${family} reference is skipped`);
}

// ------------------------------------------------------------------ the engine on the goldens

/** A golden request as the engine takes it: a choice's [name, description] list as criteria and the sent order. */
export function engineRequest(g: GoldenRequest): EvaluateRequest {
  const q = g.question;
  if (q.type !== 'choice') return { state: g.state, questions: { q: q as unknown as Question } } as EvaluateRequest;
  const pairs = q.criteria as Array<[string, unknown]>;
  return {
    state: g.state,
    questions: { q: { ...q, criteria: Object.fromEntries(pairs) } as unknown as Question },
    order: [{ id: 'q', options: pairs.map(([name]) => name) }],
  } as EvaluateRequest;
}

/** Each golden request, its result (checked to be that request's) and the request as the engine takes it. */
export function* engineCases<R extends GoldenRequest, S extends { name: string }>(
  goldens: Goldens<R, S>,
): Generator<[R, S, EvaluateRequest]> {
  for (const [i, g] of goldens.requests.entries()) {
    const result = goldens.results[i]!;
    expect(result.name).toBe(g.name);
    yield [g, result, engineRequest(g)];
  }
}

/** After the file's tests: closes what it loaded (in the order given) and removes its work folder. */
export function closeAfterAll(work: string, ...loaded: Array<Map<string, { close(): Promise<void> }>>): void {
  afterAll(async () => {
    for (const map of loaded) for (const x of map.values()) await x.close();
    rmSync(work, { recursive: true, force: true });
  });
}

/** Runs PYTHON with `args`, `input` on stdin; its stdout. */
export function python(args: string[], input: string): string {
  const run = spawnSync(PYTHON, args, { input, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (run.status !== 0) throw new Error(`${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

/**
 * The reference readout (`module`.readout, tools/families/<family>/`module`.py) of each row's raw scores,
 * with the config it names.
 */
export function referenceReadouts(
  module: 'laya_layout' | 'nli_pairs',
  configs: Record<string, unknown>,
  rows: Array<{ type: Question['type']; logits: unknown; config: string }>,
): ReadoutNumbers[] {
  const script = `import json, sys; sys.path.insert(0, ${JSON.stringify(referenceDir(module))}); from ${module} import readout
job = json.load(sys.stdin)
print(json.dumps([readout(r["type"], r["logits"], job["configs"][r["config"]]) for r in job["rows"]]))`;
  return JSON.parse(python(['-c', script], JSON.stringify({ configs, rows }))) as ReadoutNumbers[];
}

/** An answer's numbers in the reference readout's order (choice options in the sent order). */
export function answerNumbers(a: Answer, g: GoldenRequest): number[] {
  if (a.type === 'noul') return [a.noul];
  const keys =
    a.type === 'choice'
      ? (g.question.criteria as Array<[string, unknown]>).map(([name]) => name)
      : Object.keys(a.probabilities);
  return [...keys.map((k) => a.probabilities[k]!), a.confidence, ...(a.type === 'score' ? [a.score] : [])];
}

/** A reference readout's numbers, for a question of this type. */
export function readoutNumbers(r: ReadoutNumbers, type: Question['type']): number[] {
  if (type === 'noul') return [r.noul!];
  return [...r.probabilities, r.confidence!, ...(type === 'score' ? [r.score!] : [])];
}

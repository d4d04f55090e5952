// What the families' goldens generators share (development only, never packed): the question
// builders, the seeded text, questions and fake logits, the two passes of a Python reference
// (the texts to tokenize, then the layout), and the goldens.json file itself (one request or
// result a line). The cases both layouts are held to are in golden-cases.ts. Used by
// laya-goldens.ts and nli-goldens.ts.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tokenizer } from '@huggingface/tokenizers';

/** The repository's root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** Debian's Python, which runs the references (tools/families/<family>/*.py, tools/families/kit/*.py). */
const PYTHON = '/usr/bin/python3';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A golden request's question: choice criteria as [name, description] pairs (the caller's order). */
export interface Question {
  type: 'noul' | 'choice' | 'score';
  instructions?: Json;
  criteria?: Json;
}

export const noul = (instructions: Json, criteria?: Json): Question =>
  criteria === undefined ? { type: 'noul', instructions } : { type: 'noul', instructions, criteria };
export const choice = (instructions: Json, pairs: Array<[string, Json]>): Question => ({
  type: 'choice',
  instructions,
  criteria: pairs,
});
export const score = (instructions: Json, levels: Json[]): Question => ({
  type: 'score',
  instructions,
  criteria: levels,
});

// ------------------------------------------------------------------ seeded text

/** mulberry32: a small seeded generator, so the requests and logits are the same on every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Words the seeded texts draw from, in groups; each family lists its own words among them. */
export const WORDS = {
  english: ['order', 'refund', 'late', 'damaged', 'customer', 'asks', 'the', 'box', 'arrived', 'invoice'],
  nonAscii: ['café', 'naïve', 'Straße', '注文', '返金', '配送が遅れた', '顧客', 'Ελλάδα', 'مرحبا', '🙂', 'x-ray'],
  escapes: ['"quoted"', 'back\\slash', 'tab\there'],
};

/** Seeded text of `words` words drawn from `vocabulary`. */
export type SeededText = (rand: () => number, words: number) => string;
export function seededText(vocabulary: readonly string[]): SeededText {
  return (rand, words) =>
    Array.from({ length: words }, () => vocabulary[Math.floor(rand() * vocabulary.length)]!).join(' ');
}

/** `n` tokens of the test tokenizers: "a a a …" (each " a" is one token). */
export function aTokens(n: number): string {
  return n <= 0 ? '' : `a${' a'.repeat(n - 1)}`;
}

/** Option names A, B, … Z, then opt26, opt27, … */
export const letters = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => (i < 26 ? String.fromCharCode(65 + i) : `opt${i}`));

/** A seeded question `i` (noul, choice and score in turn) and a seeded state: string, object or list. */
export function mixture(
  rand: () => number,
  text: SeededText,
  i: number,
  most: { options: number; descriptionWords: number },
): { question: Question; state: Json } {
  const kind = (['noul', 'choice', 'score'] as const)[i % 3]!;
  const instr: Json = rand() < 0.7 ? text(rand, 3 + Math.floor(rand() * 12)) : { ask: text(rand, 4), n: i };
  const stateKind = Math.floor(rand() * 3);
  const state: Json =
    stateKind === 0
      ? text(rand, 5 + Math.floor(rand() * 200))
      : stateKind === 1
        ? { id: i, body: text(rand, 20), tags: [text(rand, 1), text(rand, 1)] }
        : Array.from({ length: 1 + Math.floor(rand() * 6) }, () => text(rand, 5 + Math.floor(rand() * 40)));
  let question: Question;
  if (kind === 'noul')
    question = rand() < 0.5 ? noul(instr) : noul(instr, { true: text(rand, 4), false: text(rand, 3) });
  else if (kind === 'choice')
    question = choice(
      instr,
      Array.from({ length: 1 + Math.floor(rand() * most.options) }, (_, j) => [
        `${text(rand, 1)} ${j}`,
        rand() < 0.3 ? null : text(rand, 1 + Math.floor(rand() * most.descriptionWords)),
      ]),
    );
  else
    question = score(
      instr,
      Array.from({ length: 2 + Math.floor(rand() * 9) }, () => text(rand, 1 + Math.floor(rand() * 10))),
    );
  return { question, state };
}

/**
 * The fake logits of request `i`, [rows][columns] in [−spread, spread) to 3 decimals, drawn from
 * `rand` row by row; a few ties and extremes: every 17th request (from the 4th) all equal, so the
 * first option is chosen, every 23rd (from the 6th) far apart, ±10·spread.
 */
export function fakeLogits(rand: () => number, i: number, rows: number, columns: number, spread: number): number[][] {
  let logits = Array.from({ length: rows }, () =>
    Array.from({ length: columns }, () => Math.round((rand() * 2 * spread - spread) * 1000) / 1000),
  );
  if (i % 17 === 3) logits = logits.map((row) => row.map(() => 0.5));
  if (i % 23 === 5)
    logits = logits.map((row, j) => row.map((_, k) => ((j + k) % 2 === 0 ? 10 * spread : -10 * spread)));
  return logits;
}

/** Options of a choice or levels of a score (0 for a noul). */
export function criteriaCount(q: Question): number {
  return Array.isArray(q.criteria) ? q.criteria.length : 0;
}

// ------------------------------------------------------------------ the reference and the file

function python(script: string, command: 'segments' | 'layout', job: unknown): Record<string, unknown> {
  const run = spawnSync(PYTHON, [script, command], {
    input: JSON.stringify(job),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`${script} ${command} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/**
 * The results of a Python reference for a job: it names the texts to tokenize (`segments`),
 * `tokenize` gives their token ids, and it lays the requests out with them (`layout`).
 */
export function runLayoutReference<S>(
  script: string,
  job: Record<string, unknown>,
  tokenize: (segments: S) => unknown,
): Array<Record<string, unknown>> {
  const { segments } = python(script, 'segments', job) as { segments: S };
  return (
    python(script, 'layout', { ...job, tokens: tokenize(segments) }) as { results: Array<Record<string, unknown>> }
  ).results;
}

/** Each text's token ids, without special tokens. */
export function tokenIds(tokenizer: Tokenizer, texts: string[]): Record<string, number[]> {
  return Object.fromEntries(texts.map((s) => [s, tokenizer.encode(s, { add_special_tokens: false }).ids]));
}

/** How many tokens a text is, without special tokens. */
export function tokenCount(tokenizer: Tokenizer, text: string): number {
  return tokenizer.encode(text, { add_special_tokens: false }).ids.length;
}

/**
 * Writes goldens.json: the `head` entries (about, the configs or models) on a line each, then the
 * requests and results one a line: a readable diff when a rule changes, and a small file. Says how
 * many requests it holds and how many of them the reference refused (`note` adds to that).
 */
export function writeGoldens(
  file: string,
  head: Record<string, unknown>,
  requests: unknown[],
  results: Array<Record<string, unknown>>,
  note = '',
): void {
  const list = (xs: unknown[]): string => `[\n${xs.map((x) => `    ${JSON.stringify(x)}`).join(',\n')}\n  ]`;
  const entries = Object.entries(head).map(([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  entries.push(`  "requests": ${list(requests)}`, `  "results": ${list(results)}`);
  writeFileSync(file, `{\n${entries.join(',\n')}\n}\n`);
  const refused = results.filter((r) => 'refused' in r).length;
  console.log(`${requests.length} requests (${refused} refused${note}) -> ${file}`);
}

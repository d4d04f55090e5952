// Question ids and choice option names are the caller's strings, whatever they are: `__proto__`,
// names of Object.prototype members, the empty string, any Unicode. Every question is answered under
// its own id and every option keeps its own probability key, on both body paths (parsed inline, and
// past 64 KiB parsed in the body worker and planned from bytes), over a real socket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, startListening, type TestServer } from './helpers.js';
import { seededRandom } from '../../src/common/index.js';

let s: TestServer;
let base: string;
beforeAll(async () => {
  ({ base, ...s } = await startListening({ logging: false }));
});
afterAll(() => s.close());

/** Names that collide with something in JavaScript, or are odd strings in JSON. */
const HOSTILE = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'prototype',
  '',
  ' ',
  '0',
  '-1',
  '日本語',
  '🦊',
  'e\u0301',
  '\u0000',
  '"quoted"',
];

/** A seeded generator (mulberry32), so a failing case can be replayed from its seed. */
const prng = seededRandom;

/** n distinct names drawn from HOSTILE first (shuffled), then hostile-looking made-up ones. */
function names(random: () => number, n: number): string[] {
  const pool = [...HOSTILE].sort(() => random() - 0.5);
  const out = new Set<string>(pool.slice(0, n));
  while (out.size < n) out.add(`${HOSTILE[Math.floor(random() * HOSTILE.length)]}${out.size}`);
  return [...out];
}

type Question =
  | { type: 'noul'; instructions: string }
  | { type: 'choice'; instructions: string; criteria: Record<string, null> }
  | { type: 'score'; instructions: string; criteria: string[] };

/** JSON of an object whose keys are written literally (JSON.stringify of an object literal would lose `__proto__`). */
function objectJson(entries: Array<[string, unknown]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'string' && v.startsWith('{') ? v : JSON.stringify(v)}`).join(',')}}`;
}

function questionJson(q: Question): string {
  if (q.type !== 'choice') return JSON.stringify(q);
  return objectJson([
    ['type', 'choice'],
    ['instructions', q.instructions],
    ['criteria', objectJson(Object.keys(q.criteria).map((o) => [o, null]))],
  ]);
}

/** The request body as text; past 64 KiB (padding whitespace, which JSON ignores) when `large`. */
function body(ids: string[], questions: Question[], large: boolean): string {
  const qs = `{${ids.map((id, i) => `${JSON.stringify(id)}:${questionJson(questions[i]!)}`).join(',')}}`;
  const pad = large ? ' '.repeat(70 * 1024) : '';
  return `{"state":"The invoice was paid late, in cash.",${pad}"model":"svc-latest","questions":${qs}}`;
}

function choice(options: string[]): Question {
  const criteria: Record<string, null> = {};
  for (const o of options) Object.defineProperty(criteria, o, { value: null, enumerable: true });
  return { type: 'choice', instructions: 'How was it paid?', criteria };
}

async function post(text: string): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const res = await fetch(`${base}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: text,
  });
  const raw = await res.text();
  return { status: res.status, json: JSON.parse(raw) as Record<string, unknown>, text: raw };
}

function own(o: unknown): string[] {
  return Object.keys(o as object);
}

/** Every question answered under its own id, with its own type; choice probabilities keyed by its own options. */
async function expectAnswered(ids: string[], questions: Question[], large: boolean): Promise<void> {
  const text = body(ids, questions, large);
  expect(text.length > 64 * 1024).toBe(large);
  const res = await post(text);
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  const answers = res.json.answers as Record<string, { type: string; probabilities?: Record<string, number> }>;
  expect(own(answers).sort()).toEqual([...ids].sort());
  ids.forEach((id, i) => {
    const a = Object.getOwnPropertyDescriptor(answers, id)!.value as {
      type: string;
      probabilities?: Record<string, number>;
    };
    const q = questions[i]!;
    expect(a.type).toBe(q.type);
    if (q.type === 'choice') {
      expect(own(a.probabilities).sort()).toEqual(own(q.criteria).sort());
      const sum = Object.values(a.probabilities!).reduce((x, y) => x + y, 0);
      expect(sum).toBeCloseTo(1, 6);
    }
  });
}

describe.each([
  ['inline', false],
  ['the body worker (past 64 KiB)', true],
])('own keys, parsed %s', (_path, large) => {
  it('a lone `__proto__` question is answered under its id (was a 500)', async () => {
    await expectAnswered(['__proto__'], [{ type: 'noul', instructions: 'Is it paid?' }], large);
  });

  it('a lone choice question whose options include `__proto__` keeps every probability key', async () => {
    await expectAnswered(['__proto__'], [choice(['__proto__', 'constructor', ''])], large);
  });

  it('random hostile ids and option names (seeded cases)', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const random = prng(seed);
      const n = 1 + Math.floor(random() * 6);
      const ids = names(random, n);
      const questions = ids.map((): Question => {
        const r = random();
        if (r < 0.4) return choice(names(random, 2 + Math.floor(random() * 5)));
        if (r < 0.7) return { type: 'score', instructions: 'How late?', criteria: ['on time', 'late', 'very late'] };
        return { type: 'noul', instructions: 'Is it paid?' };
      });
      await expectAnswered(ids, questions, large);
    }
  });

  it('1,000 ids, the hostile ones among them, each answered under its own id', async () => {
    const ids = names(prng(1000), 1000);
    const questions = ids.map((_, i): Question =>
      i % 50 === 0 ? choice(names(prng(i), 4)) : { type: 'noul', instructions: 'Is it paid?' },
    );
    await expectAnswered(ids, questions, large);
  });
});

// The decider-labels layout against goldens made by an independent reference (the published rules
// written in Python: tools/families/decider/decider_layout.py, never from this TypeScript): the context,
// every row's tokens, slot and label ids, and the refusals must be identical on every golden
// request; the readout of fake label logits (family temperatures, then `assay calibrate`'s) agrees
// within 1e-9 (both in float64: only the order of operations differs). docs/families/decider-labels.md.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../src/engine/errors.js';
import { answerQuestions } from '../../src/engine/execution/answers.js';
import {
  annotatedJson,
  deciderLayout,
  deciderLogps,
  DeciderRefusal,
  planDecider,
  readDeciderFolder,
  stripLevelNumber,
  type DeciderTokenizer,
} from '../../src/engine/families/decider/index.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import type { Answer } from '../../src/engine/types.js';
import {
  addedTokenStrings,
  goldenRequests,
  GOLDEN_ANSWER_TEMPERATURE,
  referenceResults,
} from '../../tools/families/decider/goldens.js';
import { ensureDeciderReplica } from '../../tools/families/decider/replica.js';
import { letters } from '../../tools/families/kit/goldens-kit.js';
import { deciderRequest, goldens } from './decider-helpers.js';
import { expectCrossesAsBudgetError, thrownBy } from './golden-helpers.js';
import { PYTHON } from './replica-helpers.js';

let dir: string;
let codec: TextCodec;
let tok: DeciderTokenizer;
let added: Set<number>;

beforeAll(async () => {
  dir = await ensureDeciderReplica();
  codec = await TextCodec.load(dir);
  const encode = (text: string) => codec.encodeText(text, undefined, true);
  tok = { encode, labels: readDeciderFolder(dir, encode).labels };
  added = new Set(addedTokenStrings(dir).map((s) => codec.tokenId(s)!));
}, 120_000);

const cases = goldens.requests.map((r, i) => [r.name, i] as const);

describe('the layout equals the reference on every golden request', () => {
  it('holds at least 100 requests, with the edge cases', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    const names = goldens.requests.map((r) => r.name);
    for (const n of [
      'choice 11 options',
      'choice 27 options',
      'choice 255 options',
      'choice 256 options',
      'choice one option, described',
      'state longer than the context cut',
      'score level numbers',
      'noul instructions object',
    ])
      expect(names).toContain(n);
    expect(names.filter((n) => n.startsWith('added token ')).length).toBe(addedTokenStrings(dir).length);
  });

  it.each(cases)('%s', (_name, i) => {
    const g = goldens.requests[i]!;
    const want = goldens.results[i]!;
    expect(want.name).toBe(g.name);
    const request = deciderRequest(g);
    if (want.refused) {
      const thrown = thrownBy(() => deciderLayout(request, tok));
      expect(thrown).toBeInstanceOf(DeciderRefusal);
      expectCrossesAsBudgetError(thrown);
      return;
    }
    const got = deciderLayout(request, tok);
    expect(got.ctx).toEqual(want.ctx);
    expect(got.cut).toBe(want.cut);
    expect(
      got.rows.map((r) => ({
        key: r.key,
        ...(r.level === undefined ? {} : { level: r.level }),
        piece: r.piece,
        slot: got.ctx.length + r.piece.length - 1,
        labels: r.labels,
      })),
    ).toEqual(want.rows);
    // Content is data: no added token of the tokenizer is ever in a row, whatever the caller wrote.
    for (const id of [...got.ctx, ...got.rows.flatMap((r) => r.piece)]) expect(added.has(id)).toBe(false);
  });
});

/** An answer's probabilities in the reference's order (noul: [yes, no]; choice: the options sent). */
function probabilitiesOf(a: Answer, options?: string[]): number[] {
  if (a.type === 'noul') return [a.noul, 1 - a.noul];
  if (a.type === 'choice') return options!.map((o) => a.probabilities[o]!);
  return Object.values(a.probabilities);
}

describe('the readout of fake label logits equals the reference (family temperatures, then assay calibrate’s)', () => {
  it.each(cases.filter(([, i]) => goldens.results[i]!.probabilities))('%s', (_name, i) => {
    const g = goldens.requests[i]!;
    const want = goldens.results[i]!.probabilities!;
    const layout = deciderLayout(deciderRequest(g), tok);
    const [tc, ts, tn] = goldens.temperature;
    const logps = deciderLogps(layout.questions, g.label_logits!, { choice: tc, score: ts, noul: tn, row: tn });
    const answers = answerQuestions(layout.questions, logps, GOLDEN_ANSWER_TEMPERATURE);
    expect(Object.keys(answers)).toEqual(Object.keys(want));
    for (const [key, p] of Object.entries(want)) {
      const got = probabilitiesOf(answers[key]!, layout.questions.find((q) => q.key === key)!.options);
      expect(got).toHaveLength(p.length);
      got.forEach((x, j) => expect(Math.abs(x - p[j]!)).toBeLessThan(1e-9));
    }
  });
});

describe('the plan the decoder engine runs', () => {
  const budgets = { request: 65_536, question: 32_768 + 4096, context: 40_960 };
  it('the context is the shared prefix, each row a question whose suffix is its piece and whose labels are single tokens', () => {
    const i = goldens.requests.findIndex((r) => r.name === 'several questions, the order sent');
    const want = goldens.results[i]!;
    const plan = planDecider(deciderRequest(goldens.requests[i]!), codec, { labels: tok.labels }, budgets);
    expect(plan.prefix).toEqual(want.ctx);
    expect(plan.questions.map((q) => q.suffix)).toEqual(want.rows!.map((r) => r.piece));
    expect(plan.questions.map((q) => q.labels.map((l) => l.tokens))).toEqual(
      want.rows!.map((r) => r.labels.map((id) => [id])),
    );
    expect(plan.readout!.questions.map((q) => [q.key, q.rows])).toEqual([
      ['z-last', [0, 1, 2]],
      ['a-first', [3]],
      ['m', [4]],
    ]);
    expect(plan.usage.input_tokens).toBe(want.ctx!.length + want.rows!.reduce((n, r) => n + r.piece.length, 0));
  });

  it('over a budget: a 422 budget error; instructions far over it are refused by their length (atLeast), before they are tokenized', () => {
    const request = deciderRequest(goldens.requests.find((r) => r.name === 'state just under the cut')!);
    expect(
      thrownBy(() => planDecider(request, codec, { labels: tok.labels }, { ...budgets, question: 32_000 })),
    ).toMatchObject({
      budget: 'question',
      atLeast: false,
    });
    const huge = { state: 's', questions: { q: { type: 'noul' as const, instructions: 'x'.repeat(1 << 22) } } };
    expect(
      thrownBy(() => planDecider(huge, codec, { labels: tok.labels }, { ...budgets, request: 1000 })),
    ).toMatchObject({
      budget: 'request',
      atLeast: true,
    });
  });
});

describe('the folder’s files', () => {
  const made: string[] = [];
  afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const folder = (files: Record<string, unknown>) => {
    const d = mkdtempSync(join(tmpdir(), 'assay-decider-folder-'));
    made.push(d);
    for (const [name, value] of Object.entries(files)) writeFileSync(join(d, name), JSON.stringify(value));
    return d;
  };
  const read = (files: Record<string, unknown>) => readDeciderFolder(folder(files), tok.encode);

  it('the label table: computed from the tokenizer (255 single tokens, A..J first), or decision.json’s', () => {
    expect(tok.labels.ids).toHaveLength(255);
    expect(tok.labels.strings.slice(0, 12)).toEqual([...'ABCDEFGHIJKL']);
    for (const [s, id] of tok.labels.strings.map((x, i) => [x, tok.labels.ids[i]!] as const))
      expect(tok.encode(s)).toEqual([id]);
    const own = { strings: tok.labels.strings.slice(0, 20), ids: tok.labels.ids.slice(0, 20) };
    const r = read({ 'decision.json': { layout: 'decider-labels-v1', labels: own } });
    expect(r.labels).toEqual(own);
    expect(r.notes[0]).toMatch(/20 labels from decision.json/);
    // 21 options do not fit a 20-label table: a 422 naming the limit.
    const q = {
      type: 'choice' as const,
      instructions: 'which?',
      criteria: Object.fromEntries(letters(21).map((l) => [l, null])),
    };
    expect(
      thrownBy(() => deciderLayout({ state: 's', questions: { q } }, { encode: tok.encode, labels: r.labels })),
    ).toBeInstanceOf(DeciderRefusal);
  });

  it('temperatures from calibration.json ([t_choice, t_score, t_noul]) and the isolated rows’ from decision.json', () => {
    expect(read({}).temperatures).toEqual({ choice: 1, score: 1, noul: 1, row: 1 });
    expect(read({ 'calibration.json': { temperature: [1.3, 1, 1.2] } }).temperatures).toEqual({
      choice: 1.3,
      score: 1,
      noul: 1.2,
      row: 1.2,
    });
    expect(
      read({ 'calibration.json': { temperature: [1.3, 1, 1.2] }, 'decision.json': { isolated_row_temperature: 2 } })
        .temperatures.row,
    ).toBe(2);
  });

  it('a malformed table or temperature is a load error naming the file', () => {
    expect(thrownBy(() => read({ 'decision.json': { labels: { strings: ['A'], ids: [1] } } }))).toBeInstanceOf(
      ModelLoadError,
    );
    expect(thrownBy(() => read({ 'calibration.json': { temperature: [1, 0, 1] } }))).toMatchObject({
      message: expect.stringMatching(/calibration\.json: temperature\[1\]: expected a positive number/),
    });
    expect(thrownBy(() => read({ 'calibration.json': { temperature: 'hot' } }))).toBeInstanceOf(ModelLoadError);
    // One rule for every family's calibration.json: one number is every type's temperature.
    expect(read({ 'calibration.json': { temperature: 1.03 } }).temperatures).toEqual({
      choice: 1.03,
      score: 1.03,
      noul: 1.03,
      row: 1.03,
    });
  });
});

describe('rules', () => {
  it('the folder is recognised by decision.json’s layout decider-labels-v1', () => {
    expect(detectFamily(dir)).toBe('decider-labels');
  });

  it('a score level loses one leading number, as Python’s \\s and \\d read it', () => {
    expect(stripLevelNumber('2: somewhat')).toBe('somewhat');
    expect(stripLevelNumber('1:2: x')).toBe('2: x');
    expect(stripLevelNumber('\u001c٣ :x')).toBe('x');
    expect(stripLevelNumber('\ufeff3: x')).toBe('\ufeff3: x'); // not whitespace to Python
    expect(stripLevelNumber('x: 1')).toBe('x: 1');
  });

  it('annotates arrays of 8 or more, _index first whatever keys an element has', () => {
    expect(annotatedJson([1, 2, 3, 4, 5, 6, 7])).toBe('[1, 2, 3, 4, 5, 6, 7]');
    const eight = annotatedJson([{ '2': 'b', a: 1 }, 'x', 3, 4, 5, 6, 7, { _index: 'own' }]);
    expect(eight).toBe(
      '[{"_index": 0, "2": "b", "a": 1}, {"_index": 1, "value": "x"}, {"_index": 2, "value": 3}, ' +
        '{"_index": 3, "value": 4}, {"_index": 4, "value": 5}, {"_index": 5, "value": 6}, ' +
        '{"_index": 6, "value": 7}, {"_index": "own"}]',
    );
  });
});

describe.skipIf(!existsSync(PYTHON))(`the reference, run live (${PYTHON})`, () => {
  it('the generator makes the stored requests, and the reference gives the stored results', () => {
    const requests = goldenRequests(dir);
    expect(JSON.parse(JSON.stringify(requests))).toEqual(goldens.requests);
    const picked = requests.filter(
      (r, i) => i % 9 === 0 || goldens.results[i]!.refused || r.name.includes('added token <|im'),
    );
    const { results } = referenceResults(dir, picked);
    for (const result of results) expect(result).toEqual(goldens.results.find((g) => g.name === result.name));
  }, 120_000);
});

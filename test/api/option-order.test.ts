// Options and question ids keep the order the caller sent them, as the hosted (Python) service
// keeps it: a JS object lists integer-like keys ("1", "2", "10") first, ascending, so a choice sent
// as {"3", "1", "2"} was prompted, labelled and answered as 1, 2, 3. Over a real socket, on both
// body paths: a small body parsed inline, and one past DEFAULTS.inlineBodyBytes that the body
// worker checks and the planner parses from its bytes. Bodies are written as text: a JS object
// cannot hold "3" before "1".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/defaults.js';
import { auth, startListening, type TestServer } from './helpers.js';

let server: TestServer & { base: string };

beforeAll(async () => {
  server = await startListening({ logging: false });
});
afterAll(() => server.close());

const STATE = 'The parcel arrived two days late and the box was dented; the customer wants a refund.';

/** Padding the contract ignores (an unknown field), enough to send the body to the body worker. */
const PADDING = `,"padding":${JSON.stringify('x'.repeat(DEFAULTS.inlineBodyBytes))}`;

const PATHS = { 'a small body (parsed inline)': false, 'a large body (the body worker)': true } as const;

function bodyOf(questions: string, large: boolean): string {
  const body = `{"state":${JSON.stringify(STATE)},"model":"svc-latest","questions":${questions}${large ? PADDING : ''}}`;
  expect(Buffer.byteLength(body) > DEFAULTS.inlineBodyBytes).toBe(large);
  return body;
}

async function post(body: string): Promise<string> {
  const res = await fetch(`${server.base}/v1/systemone`, { method: 'POST', headers: auth(), body });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text;
}

/** A choice question's JSON with these options, in this order (descriptions from the name). */
function choice(options: string[]): string {
  const criteria = options.map((o) => `${JSON.stringify(o)}:${JSON.stringify(`when it is ${o}`)}`).join(',');
  return `{"type":"choice","instructions":"Which fits best?","criteria":{${criteria}}}`;
}

/** The keys of a flat JSON object's text, in the order written. */
function keysOf(objectText: string): string[] {
  return [...objectText.matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
}

/** The keys of each `"<field>":{...}` (a flat object) in the response text, in the order written. */
function mapsIn(text: string, field: 'probabilities' | 'legend'): string[][] {
  return [...text.matchAll(new RegExp(`"${field}":(\\{[^{}]*\\})`, 'g'))].map((m) => keysOf(m[1]!));
}

/** The question ids of the response text's answers map, in the order written. */
function answerIds(text: string): string[] {
  return [...text.matchAll(/"((?:[^"\\]|\\.)*)":\{"type":/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
}

const OPTION_ORDERS: Record<string, string[]> = {
  'integer-like names': ['3', '1', '2'],
  'numeric strings ("01" is not integer-like)': ['10', '2', '01'],
  'mixed names': ['b', '2', 'a', '1'],
};

describe.each(Object.entries(PATHS))('on %s', (_, large) => {
  for (const [name, options] of Object.entries(OPTION_ORDERS)) {
    it(`a choice's probabilities are written in the order sent: ${name}`, async () => {
      const text = await post(bodyOf(`{"q":${choice(options)}}`, large));
      expect(mapsIn(text, 'probabilities')).toEqual([options]);
      const answer = (JSON.parse(text) as { answers: { q: { choice: string } } }).answers.q;
      expect(options).toContain(answer.choice);
    });
  }

  it('the answers map lists integer-like question ids in the order sent; score legends stay by level', async () => {
    const questions =
      `{"10":${choice(['3', '1', '2'])},"9":{"type":"noul","instructions":"Is it late?"},` +
      `"x":{"type":"score","instructions":"How bad?","criteria":["fine","poor","awful"]},` +
      `"2":${choice(['b', '2', 'a', '1'])}}`;
    const text = await post(bodyOf(questions, large));
    expect(answerIds(text)).toEqual(['10', '9', 'x', '2']);
    // Per answer in that order: the choices' options as sent, the score's levels 0, 1, 2.
    expect(mapsIn(text, 'probabilities')).toEqual([
      ['3', '1', '2'],
      ['0', '1', '2'],
      ['b', '2', 'a', '1'],
    ]);
    expect(mapsIn(text, 'legend')).toEqual([['0', '1', '2']]);
  });

  it('the prompt lists the options in the order sent: the answer moves with the order', async () => {
    const probabilities = async (options: string[]) =>
      (
        JSON.parse(await post(bodyOf(`{"q":${choice(options)}}`, large))) as {
          answers: { q: { probabilities: Record<string, number> } };
        }
      ).answers.q.probabilities;
    const sent = await probabilities(['3', '1', '2']);
    const ascending = await probabilities(['1', '2', '3']);
    // The same options and descriptions listed in another order are another prompt (on the old
    // code both were prompted as 1, 2, 3 and answered alike, bit for bit).
    expect(sent).not.toEqual(ascending);
    // And the same order sent again is the same prompt.
    expect(await probabilities(['3', '1', '2'])).toEqual(sent);
  });
});

it('both body paths prompt a choice alike: the same options in the same order get the same answer', async () => {
  const questions = `{"2":${choice(['b', '2', 'a', '1'])},"1":${choice(['3', '1', '2'])}}`;
  const small = JSON.parse(await post(bodyOf(questions, false))) as { answers: unknown };
  const large = JSON.parse(await post(bodyOf(questions, true))) as { answers: unknown };
  expect(large.answers).toEqual(small.answers);
});

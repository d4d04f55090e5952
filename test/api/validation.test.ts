// Every pinned 422, with FastAPI/pydantic v2 detail entries, and what the hosted service accepts
// that a stricter server would refuse (unknown fields, empty states, one-option choices).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, mixedRequest, startServer, type Detail, type TestServer } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s?.close();
});

async function post(payload: unknown) {
  const res = await s.app.inject({
    method: 'POST',
    url: '/v1/systemone',
    headers: auth(),
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: res.statusCode, body: res.json() as { detail: Detail[] } & Record<string, unknown> };
}

const base = () => ({
  state: 'Some text.',
  model: 'svc-latest',
  questions: { q: { type: 'noul', instructions: 'Is it text?' } },
});
const withQuestion = (q: unknown) => ({ ...base(), questions: { q } });
const options = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`opt${i}`, null]));

describe('request body', () => {
  const DOCUMENT_MSG =
    'Extra inputs are not permitted: `document` was replaced by `state`; send the content as `state`';

  it('rejects `document` (extra_forbidden, saying to send `state`) and reports the missing state', async () => {
    const body = { document: 'Some text.', model: 'svc-latest', questions: base().questions };
    const r = await post(body);
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      { type: 'missing', loc: ['body', 'state'], msg: 'Field required', input: body },
      { type: 'extra_forbidden', loc: ['body', 'document'], msg: DOCUMENT_MSG, input: 'Some text.' },
    ]);
  });

  it('rejects `document` even when `state` is present', async () => {
    const r = await post({ ...base(), document: 'x' });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'document'], msg: DOCUMENT_MSG, input: 'x' },
    ]);
  });

  it('ignores fields it does not know at the top level, as pydantic does (OpenRouter sends user, session_id, provider, trace)', async () => {
    const r = await post({
      ...base(),
      user: 'u-1',
      session_id: 's-1',
      provider: { order: ['assay'] },
      trace: { trace_id: 't' },
      extra: [1, 2],
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.answers as object)).toEqual(['q']);
  });

  it('unknown fields at every level change nothing: the answers are those of the request without them', async () => {
    const questions = {
      paid: { type: 'noul', instructions: 'Was it paid?', criteria: { true: 'paid', false: 'unpaid' } },
      channel: { type: 'choice', instructions: 'How?', criteria: { card: null, cash: 'in notes' } },
      punctuality: { type: 'score', instructions: 'How punctual?', criteria: ['late', 'on time'] },
    };
    const plain = await post({ state: 'The invoice was paid late, in cash.', model: 'svc-latest', questions });
    const extra = await post({
      state: 'The invoice was paid late, in cash.',
      model: 'svc-latest',
      user: 'u-1',
      extra_body: { x: 1 },
      questions: {
        paid: { ...questions.paid, weight: 3, criteria: { ...questions.paid.criteria, maybe: 'partly' } },
        channel: { ...questions.channel, options: ['card'], multi: true },
        punctuality: { ...questions.punctuality, scale: 'ordinal' },
      },
    });
    expect([plain.status, extra.status]).toEqual([200, 200]);
    // Six decimals: a prefix-cache hit may differ from the miss in the last bits of a float.
    const rounded = (b: unknown) =>
      JSON.parse(JSON.stringify(b, (_k, v: unknown) => (typeof v === 'number' ? +v.toFixed(6) : v)));
    expect(rounded(extra.body.answers)).toEqual(rounded(plain.body.answers));
  });

  it.each([
    ['model', null],
    ['questions', null],
  ])('rejects a null %s', async (field, value) => {
    const r = await post({ ...base(), [field]: value });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      field === 'model'
        ? { type: 'string_type', loc: ['body', 'model'], msg: 'Input should be a valid string', input: null }
        : { type: 'dict_type', loc: ['body', 'questions'], msg: 'Input should be a valid dictionary', input: null },
    ]);
  });

  it('rejects an empty questions map', async () => {
    const r = await post({ ...base(), questions: {} });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      {
        type: 'too_short',
        loc: ['body', 'questions'],
        msg: 'Dictionary should have at least 1 item after validation, not 0',
        input: {},
        ctx: { field_type: 'Dictionary', min_length: 1, actual_length: 0 },
      },
    ]);
  });

  it('reports each missing required field with the parent object as input', async () => {
    const r = await post({});
    expect(r.status).toBe(422);
    expect(r.body.detail.map((d) => [d.type, d.loc])).toEqual([
      ['missing', ['body', 'state']],
      ['missing', ['body', 'model']],
      ['missing', ['body', 'questions']],
    ]);
    expect(r.body.detail[0]!.input).toEqual({});
  });

  it.each([null, 42, 3.5, true, false])('rejects state %j, one entry per member of the union', async (state) => {
    const r = await post({ ...base(), state });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      { type: 'string_type', loc: ['body', 'state', 'str'], msg: 'Input should be a valid string', input: state },
      {
        type: 'dict_type',
        loc: ['body', 'state', 'dict[str,any]'],
        msg: 'Input should be a valid dictionary',
        input: state,
      },
      { type: 'list_type', loc: ['body', 'state', 'list[any]'], msg: 'Input should be a valid list', input: state },
    ]);
  });

  it.each([
    ['""', ''],
    ['{}', {}],
    ['[]', []],
  ])('answers an empty state %s (content like any other)', async (_name, state) => {
    const r = await post({ ...mixedRequest(state) });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.answers as object).sort()).toEqual(['channel', 'paid', 'punctuality']);
  });

  it('rejects a body that is not an object, and a missing body', async () => {
    const arr = await post([]);
    expect(arr.status).toBe(422);
    expect(arr.body.detail).toEqual([
      {
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: [],
      },
    ]);
    const none = await s.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth() });
    expect(none.statusCode).toBe(422);
    expect(none.json().detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
  });

  it('rejects malformed JSON with json_invalid at the character offset', async () => {
    const r = await post('{"state": "x", "model": }');
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      {
        type: 'json_invalid',
        loc: ['body', 24],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: 'Expecting value' },
      },
    ]);
    const trailing = await post('{"state": "x",}');
    expect(trailing.body.detail[0]).toMatchObject({
      loc: ['body', 14],
      ctx: { error: 'Expecting property name enclosed in double quotes' },
    });
    const extra = await post('{} {}');
    expect(extra.body.detail[0]).toMatchObject({ loc: ['body', 3], ctx: { error: 'Extra data' } });
  });

  it('treats __proto__ and constructor as ordinary keys, validated like any other', async () => {
    const bad = await post('{"state": "x", "model": "svc-latest", "questions": {"__proto__": {"type": "maybe"}}}');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'union_tag_invalid', loc: ['body', 'questions', '__proto__'] });
    const ok = await post(
      '{"state": {"__proto__": "a state field"}, "model": "svc-latest", "questions": {"__proto__": {"type": "noul"},' +
        ' "constructor": {"type": "choice", "criteria": {"__proto__": null, "constructor": "c", "toString": null}}}}',
    );
    expect(ok.status).toBe(200);
    const answers = ok.body.answers as Record<string, { type: string; probabilities?: Record<string, number> }>;
    expect(Object.keys(answers).sort()).toEqual(['__proto__', 'constructor']);
    expect(answers['__proto__']!.type).toBe('noul');
    expect(Object.keys(answers['constructor']!.probabilities!).sort()).toEqual([
      '__proto__',
      'constructor',
      'toString',
    ]);
  });

  it('rejects a model that is not a string, and an unknown model at ["body","model"]', async () => {
    const num = await post({ ...base(), model: 7 });
    expect(num.body.detail).toEqual([
      { type: 'string_type', loc: ['body', 'model'], msg: 'Input should be a valid string', input: 7 },
    ]);
    const r = await post({ ...base(), model: 'svc-9.9.9' });
    expect(r.status).toBe(422);
    expect(r.body.detail).toHaveLength(1);
    expect(r.body.detail[0]).toMatchObject({ type: 'literal_error', loc: ['body', 'model'], input: 'svc-9.9.9' });
    expect(r.body.detail[0]!.msg).toContain("'svc-latest'");
  });
});

describe('questions', () => {
  it('reports an unknown type as union_tag_invalid with the whole question as input', async () => {
    const q = { type: 'yesno', instructions: 'x' };
    const r = await post(withQuestion(q));
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      {
        type: 'union_tag_invalid',
        loc: ['body', 'questions', 'q'],
        msg: "Input tag 'yesno' found using 'type' does not match any of the expected tags: 'noul', 'choice', 'score'",
        input: q,
        ctx: { discriminator: "'type'", tag: 'yesno', expected_tags: "'noul', 'choice', 'score'" },
      },
    ]);
  });

  it('reports a missing type as union_tag_not_found', async () => {
    const q = { instructions: 'x' };
    const r = await post(withQuestion(q));
    expect(r.body.detail).toEqual([
      {
        type: 'union_tag_not_found',
        loc: ['body', 'questions', 'q'],
        msg: "Unable to extract tag using discriminator 'type'",
        input: q,
        ctx: { discriminator: "'type'" },
      },
    ]);
  });

  it('puts the tag in the location of a field error inside a question', async () => {
    const q = { type: 'choice', instructions: 'Pick' };
    const r = await post(withQuestion(q));
    expect(r.body.detail).toEqual([
      { type: 'missing', loc: ['body', 'questions', 'q', 'choice', 'criteria'], msg: 'Field required', input: q },
    ]);
    const score = await post(withQuestion({ type: 'score', instructions: 'Rate' }));
    expect(score.body.detail[0]!.loc).toEqual(['body', 'questions', 'q', 'score', 'criteria']);
  });

  it('rejects a question that is not an object', async () => {
    const r = await post(withQuestion('Is it?'));
    expect(r.body.detail).toEqual([
      {
        type: 'model_attributes_type',
        loc: ['body', 'questions', 'q'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: 'Is it?',
      },
    ]);
  });

  it('ignores fields it does not know on a question (answered from the fields it knows)', async () => {
    const r = await post(
      withQuestion({ type: 'choice', instructions: 'x', options: [{ option: 'a' }], weight: 2, criteria: options(2) }),
    );
    expect(r.status).toBe(200);
    expect(Object.keys((r.body.answers as Record<string, { probabilities: object }>).q!.probabilities)).toEqual([
      'opt0',
      'opt1',
    ]);
  });

  it('rejects a choice with no options', async () => {
    const r = await post(withQuestion({ type: 'choice', instructions: 'Pick', criteria: {} }));
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([
      {
        type: 'too_short',
        loc: ['body', 'questions', 'q', 'choice', 'criteria'],
        msg: 'Dictionary should have at least 1 item after validation, not 0',
        input: {},
        ctx: { field_type: 'Dictionary', min_length: 1, actual_length: 0 },
      },
    ]);
  });

  it('answers a choice with one option: that option, probability 1, confidence 1', async () => {
    const r = await post(withQuestion({ type: 'choice', instructions: 'Pick', criteria: { only: 'the one option' } }));
    expect(r.status).toBe(200);
    expect((r.body.answers as Record<string, unknown>).q).toEqual({
      type: 'choice',
      choice: 'only',
      probabilities: { only: 1 },
      confidence: 1,
    });
  });

  it('rejects a choice with 256 options and accepts 255', async () => {
    const r = await post(withQuestion({ type: 'choice', instructions: 'Pick', criteria: options(256) }));
    expect(r.status).toBe(422);
    expect(r.body.detail).toHaveLength(1);
    expect(r.body.detail[0]).toMatchObject({
      type: 'too_long',
      loc: ['body', 'questions', 'q', 'choice', 'criteria'],
      msg: 'Dictionary should have at most 255 items after validation, not 256',
      ctx: { field_type: 'Dictionary', max_length: 255, actual_length: 256 },
    });
    const ok = await post(withQuestion({ type: 'choice', instructions: 'Pick', criteria: options(255) }));
    expect(ok.status).toBe(200);
    expect(Object.keys((ok.body.answers as Record<string, { probabilities: object }>).q!.probabilities)).toHaveLength(
      255,
    );
  });

  it('answers a choice whose option name is the empty string (any string is a key, as in pydantic)', async () => {
    const r = await post(
      withQuestion({ type: 'choice', instructions: 'Pick', criteria: { '': 'nothing applies', b: null } }),
    );
    expect(r.status).toBe(200);
    expect(Object.keys((r.body.answers as Record<string, { probabilities: object }>).q!.probabilities).sort()).toEqual([
      '',
      'b',
    ]);
  });

  it('accepts null choice descriptions', async () => {
    const r = await post(
      withQuestion({ type: 'choice', instructions: 'Pick', criteria: { yes: null, no: null, maybe: 'unclear' } }),
    );
    expect(r.status).toBe(200);
  });

  it.each([0, 1, 11])('rejects a score with %i level(s)', async (n) => {
    const levels = Array.from({ length: n }, (_, i) => `level ${i}`);
    const r = await post(withQuestion({ type: 'score', instructions: 'Rate', criteria: levels }));
    expect(r.status).toBe(422);
    const min = n < 2;
    expect(r.body.detail).toEqual([
      {
        type: min ? 'too_short' : 'too_long',
        loc: ['body', 'questions', 'q', 'score', 'criteria'],
        msg: min
          ? `List should have at least 2 items after validation, not ${n}`
          : 'List should have at most 10 items after validation, not 11',
        input: levels,
        ctx: min
          ? { field_type: 'List', min_length: 2, actual_length: n }
          : { field_type: 'List', max_length: 10, actual_length: 11 },
      },
    ]);
  });

  it('accepts 2 and 10 score levels', async () => {
    for (const n of [2, 10]) {
      const r = await post(
        withQuestion({
          type: 'score',
          instructions: 'Rate',
          criteria: Array.from({ length: n }, (_, i) => `level ${i}`),
        }),
      );
      expect(r.status).toBe(200);
    }
  });

  it('rejects a null score level, naming each union member', async () => {
    const r = await post(withQuestion({ type: 'score', instructions: 'Rate', criteria: ['low', null] }));
    expect(r.body.detail.map((d) => d.loc)).toEqual([
      ['body', 'questions', 'q', 'score', 'criteria', 1, 'str'],
      ['body', 'questions', 'q', 'score', 'criteria', 1, 'dict[str,any]'],
      ['body', 'questions', 'q', 'score', 'criteria', 1, 'list[any]'],
    ]);
  });

  it('ignores noul criteria keys other than true/false, and still checks the two it knows', async () => {
    const r = await post(
      withQuestion({ type: 'noul', instructions: 'Is it?', criteria: { true: 'yes', yes: 'y', no: 'n' } }),
    );
    expect(r.status).toBe(200);
    const bad = await post(withQuestion({ type: 'noul', instructions: 'Is it?', criteria: { true: 5, yes: 'y' } }));
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d) => d.loc)).toEqual([
      ['body', 'questions', 'q', 'noul', 'criteria', 'true', 'str'],
      ['body', 'questions', 'q', 'noul', 'criteria', 'true', 'dict[str,any]'],
      ['body', 'questions', 'q', 'noul', 'criteria', 'true', 'list[any]'],
    ]);
  });

  it('accepts noul criteria with only one side, or null', async () => {
    expect((await post(withQuestion({ type: 'noul', instructions: 'Is it?', criteria: { false: 'no' } }))).status).toBe(
      200,
    );
    expect((await post(withQuestion({ type: 'noul', instructions: 'Is it?', criteria: null }))).status).toBe(200);
  });

  it('accepts a question without instructions (the machine schema makes it optional)', async () => {
    const r = await post({
      ...base(),
      questions: {
        a: { type: 'noul' },
        b: { type: 'choice', criteria: options(2) },
        c: { type: 'score', criteria: ['lo', 'hi'] },
      },
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.answers as object).sort()).toEqual(['a', 'b', 'c']);
  });

  it('collects errors from several questions in one response', async () => {
    const r = await post({
      ...mixedRequest(),
      questions: { a: { type: 'choice', criteria: {} }, b: { type: 'score', criteria: 'x' } },
    });
    expect(r.body.detail.map((d) => [d.type, d.loc])).toEqual([
      ['too_short', ['body', 'questions', 'a', 'choice', 'criteria']],
      ['list_type', ['body', 'questions', 'b', 'score', 'criteria']],
    ]);
  });
});

describe('token budgets', () => {
  it('answers 422 naming the budget and the count', async () => {
    const before = s.evaluator.stats().tokensEvaluated;
    const r = await post({ ...base(), state: 'word '.repeat(40_000) });
    expect(r.status).toBe(422);
    expect(r.body.detail).toHaveLength(1);
    const d = r.body.detail[0]!;
    expect(d).toMatchObject({ type: 'token_budget_exceeded', loc: ['body'] });
    const ctx = d.ctx as { budget: string; limit: number; count: number };
    expect(['request', 'question', 'context']).toContain(ctx.budget);
    expect(ctx.count).toBeGreaterThan(ctx.limit);
    expect(d.msg).toContain(String(ctx.limit));
    expect(d.msg).toContain(String(ctx.count));
    expect(s.evaluator.stats().tokensEvaluated).toBe(before); // refused before any model work
  });
});

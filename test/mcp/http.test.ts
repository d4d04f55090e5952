// The server's MCP endpoint (/mcp, Streamable HTTP) driven by the official SDK's own client over a
// real socket, on the real engine: every tool listed and called, answers equal to POST
// /v1/systemone's for the same request, decisions from the registry's thresholds, invalid calls
// answered as tool errors carrying the API's 422 details, and the endpoint behind the same keys,
// per-key models, token limits and Origin check as the rest of the API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { keysFromList, sha256 } from '../../src/api/auth.js';
import { decide } from '../../src/mcp/index.js';
import type { Evaluator } from '../../src/engine/index.js';
import { auth, KEY, MODEL_ID, OTHER_KEY, startListening, tinyEvaluator, type TestServer } from '../api/helpers.js';

type Listening = TestServer & { base: string };
const CANARY = 'canary-mcp-7c1f';
const POOR_KEY = 'poor-key';

/** A connected SDK client of `base`/mcp with `key` (and any extra headers). */
async function connect(base: string, key = KEY, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'assay-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } },
  });
  await client.connect(transport);
  return client;
}

/** A tool result's structured content, or its error body (JSON text) when it is a tool error. */
function parsed(result: Awaited<ReturnType<Client['callTool']>>): any {
  if (result.isError) return { error: JSON.parse((result.content as Array<{ text: string }>)[0]!.text) };
  return result.structuredContent;
}

describe('the MCP endpoint /mcp', () => {
  let evaluator: Evaluator;
  let s: Listening;
  let client: Client;

  beforeAll(async () => {
    // No prefix cache: the tool's pass and the direct call's are the same passes, bit for bit.
    evaluator = await tinyEvaluator({ prefixCacheBytes: 0 });
    const registry = checkRegistry(
      {
        default: MODEL_ID,
        models: {
          // Thresholds that always act (noul certainty is ≥ 0.5), and ones that never act nor review.
          [MODEL_ID]: {
            path: evaluator.modelDir,
            description: 'tiny synthetic',
            release_date: '2026-11-22',
            decision_thresholds: { act: { noul: 0.5, choice: 0, score: 0 } },
          },
          'svc-0.9.0': {
            path: evaluator.modelDir,
            description: 'older tiny synthetic',
            release_date: '2026-01-01',
            decision_thresholds: { act: { noul: 1 }, review: { noul: 1 } },
          },
        },
        aliases: { 'svc-latest': MODEL_ID },
      },
      '(mcp test registry)',
    );
    s = await startListening({
      evaluator,
      registry,
      keys: [
        ...keysFromList(KEY),
        { name: 'restricted', hash: sha256(OTHER_KEY), models: ['svc-latest'] },
        { name: 'poor', hash: sha256(POOR_KEY), inputTokensPerSecond: 1 },
      ],
    });
    client = await connect(s.base);
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await s.close();
    await evaluator.close();
  });

  it('lists five tools written for an agent: descriptions with an example, typed input schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['models', 'check', 'classify', 'score', 'evaluate']);
    for (const t of tools.filter((t) => t.name !== 'models')) {
      expect(t.description).toMatch(/e\.g\. \{/);
      expect(t.inputSchema.required).toContain('state');
      expect((t.inputSchema.properties as any).state.anyOf.map((a: any) => a.type)).toEqual([
        'string',
        'object',
        'array',
      ]);
    }
  });

  it('every tool answers as POST /v1/systemone answers the same request, with decisions from the registry', async () => {
    const direct = async (body: unknown) => {
      const res = await fetch(`${s.base}/v1/systemone`, {
        method: 'POST',
        headers: auth(),
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as any;
    };
    const state = { ticket: 'My package never arrived and I want my money back.', channel: 'email' };
    const models = parsed(await client.callTool({ name: 'models', arguments: {} }));
    expect(models.default).toBe(MODEL_ID);
    expect(models.models.map((m: any) => m.name)).toEqual(['svc-latest']);

    const check = parsed(
      await client.callTool({
        name: 'check',
        arguments: {
          state,
          instructions: 'Does the customer ask for a refund?',
          criteria: { true: 'asks for money back' },
        },
      }),
    );
    const want = await direct({
      model: MODEL_ID,
      state,
      questions: {
        q: {
          type: 'noul',
          instructions: 'Does the customer ask for a refund?',
          criteria: { true: 'asks for money back' },
        },
      },
    });
    expect(check.answer).toEqual(want.answers.q);
    expect(check.model).toBe(MODEL_ID);
    expect(check.usage).toEqual(want.usage);
    expect(check.decision).toEqual(decide(check.answer, { act: { noul: 0.5, choice: 0, score: 0 } }));
    expect(check.decision.decision).toBe('act');

    // A list of option names is the same question as a map of names to null; option order is kept.
    const listed = parsed(
      await client.callTool({
        name: 'classify',
        arguments: { state, instructions: 'Which queue?', criteria: ['shipping', 'billing', 'other'] },
      }),
    );
    const mapped = parsed(
      await client.callTool({
        name: 'classify',
        arguments: { state, instructions: 'Which queue?', criteria: { shipping: null, billing: null, other: null } },
      }),
    );
    expect(listed.answer).toEqual(mapped.answer);
    expect(Object.keys(listed.answer.probabilities)).toEqual(['shipping', 'billing', 'other']);
    const wantChoice = await direct({
      model: MODEL_ID,
      state,
      questions: {
        q: { type: 'choice', instructions: 'Which queue?', criteria: { shipping: null, billing: null, other: null } },
      },
    });
    expect(listed.answer).toEqual(wantChoice.answers.q);

    // Integer-like names too: a list is asked in its order ("3", "1", "2"; an object would list them
    // 1, 2, 3), as a body sent as text in that order is; the same names sorted are another prompt.
    const classify = async (criteria: string[]) =>
      parsed(await client.callTool({ name: 'classify', arguments: { state, instructions: 'Which queue?', criteria } }));
    const numbered = await classify(['3', '1', '2']);
    const asText = await fetch(`${s.base}/v1/systemone`, {
      method: 'POST',
      headers: auth(),
      body: `{"model":"${MODEL_ID}","state":${JSON.stringify(state)},"questions":{"q":{"type":"choice","instructions":"Which queue?","criteria":{"3":null,"1":null,"2":null}}}}`,
    });
    expect(numbered.answer).toEqual(((await asText.json()) as any).answers.q);
    expect(numbered.answer.probabilities).not.toEqual((await classify(['1', '2', '3'])).answer.probabilities);

    const score = parsed(
      await client.callTool({
        name: 'score',
        arguments: { state, instructions: 'How upset?', criteria: ['calm', 'annoyed', 'angry'], model: 'svc-latest' },
      }),
    );
    const wantScore = await direct({
      model: 'svc-latest',
      state,
      questions: { q: { type: 'score', instructions: 'How upset?', criteria: ['calm', 'annoyed', 'angry'] } },
    });
    expect(score.answer).toEqual(wantScore.answers.q);

    const questions = {
      refund: { type: 'noul', instructions: 'Refund?' },
      topic: { type: 'choice', instructions: 'Topic?', criteria: { delivery: null, billing: null } },
    };
    const whole = parsed(
      await client.callTool({ name: 'evaluate', arguments: { state, questions, model: 'svc-0.9.0' } }),
    );
    const wantWhole = await direct({ model: 'svc-0.9.0', state, questions });
    expect(whole.answers).toEqual(wantWhole.answers);
    expect(whole.usage).toEqual(wantWhole.usage);
    // svc-0.9.0 acts and reviews only at certainty 1 (never, for this model): its noul answer is abstained on; choice has no threshold.
    expect(whole.decisions).toEqual({
      refund: decide(whole.answers.refund, { act: { noul: 1 }, review: { noul: 1 } }),
    });
    expect(whole.decisions.refund.decision).toBe('abstain');
  });

  it('answers an invalid call with a tool error carrying the 422 details, located in the tool arguments', async () => {
    const empty = parsed(
      await client.callTool({ name: 'classify', arguments: { state: 'x', instructions: 'q', criteria: {} } }),
    );
    expect(empty.error.status).toBe(422);
    expect(empty.error.detail[0]).toMatchObject({ type: 'too_short', loc: ['arguments', 'criteria'] });
    const levels = Array.from({ length: 11 }, (_, i) => `level ${i}`);
    const many = parsed(
      await client.callTool({ name: 'score', arguments: { state: 'x', instructions: 'q', criteria: levels } }),
    );
    expect(many.error.detail[0]).toMatchObject({ type: 'too_long', loc: ['arguments', 'criteria'] });
    const model = parsed(
      await client.callTool({ name: 'check', arguments: { state: 'x', instructions: 'q', model: 'nope' } }),
    );
    expect(model.error.status).toBe(422);
    expect(model.error.detail[0].loc).toEqual(['arguments', 'model']);
    const whole = parsed(
      await client.callTool({
        name: 'evaluate',
        arguments: { state: 'x', questions: { a: { type: 'maybe', instructions: 'q' } } },
      }),
    );
    expect(whole.error.detail[0]).toMatchObject({ type: 'union_tag_invalid', loc: ['arguments', 'questions', 'a'] });
    // A wrong type is refused by the tool's input schema before it reaches the service.
    const typed = await client.callTool({ name: 'check', arguments: { state: 5, instructions: 'q' } });
    expect(typed.isError).toBe(true);
    expect((typed.content as any)[0].text).toMatch(/Input validation error/);
  });

  it("holds the key's models, token limit and Origin check; no key, no MCP", async () => {
    const restricted = await connect(s.base, OTHER_KEY);
    const listed = parsed(await restricted.callTool({ name: 'models', arguments: {} }));
    expect(listed.models.map((m: any) => m.name)).toEqual(['svc-latest']);
    const forbidden = parsed(
      await restricted.callTool({ name: 'check', arguments: { state: 'x', instructions: 'q', model: 'svc-0.9.0' } }),
    );
    expect(forbidden.error.status).toBe(403);
    await restricted.close();

    // One token a second: the first call is admitted and charged, the next one is refused with 429.
    const poor = await connect(s.base, POOR_KEY);
    expect(
      parsed(await poor.callTool({ name: 'check', arguments: { state: 'x', instructions: 'q' } })).answer.type,
    ).toBe('noul');
    await expect(poor.callTool({ name: 'check', arguments: { state: 'x', instructions: 'q' } })).rejects.toThrow(
      /Rate limit exceeded/,
    );

    await expect(connect(s.base, 'not-a-key')).rejects.toMatchObject({ code: 401 });
    await expect(connect(s.base, KEY, { origin: 'http://attacker.example' })).rejects.toMatchObject({
      code: 403,
      message: expect.stringMatching(/Origin .*attacker\.example.* is not allowed/),
    });
  });

  it('is stateless (GET is 405), bounds its bodies (413 naming the limit) and never logs content', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${s.base}/mcp`, { method, headers: { ...auth(), accept: 'text/event-stream' } });
      expect([method, res.status, res.headers.get('allow')]).toEqual([method, 405, 'POST']);
    }
    const big = await fetch(`${s.base}/mcp`, {
      method: 'POST',
      headers: { ...auth(), accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'check', arguments: { state: 'x'.repeat(300_000) } },
      }),
    });
    expect(big.status).toBe(413);
    expect((await big.json()).detail).toBe('Request body is larger than 262144 bytes');

    const logged = s.logs.length;
    await client.callTool({ name: 'check', arguments: { state: `${CANARY} state`, instructions: `${CANARY} q` } });
    await client.callTool({
      name: 'classify',
      arguments: { state: CANARY, instructions: CANARY, criteria: { [CANARY]: CANARY } },
    });
    await client.callTool({ name: 'classify', arguments: { state: CANARY, instructions: CANARY, criteria: {} } });
    const lines = s.logs.slice(logged).join('');
    expect(lines).toMatch(/"route":"\/mcp"/);
    expect(lines).not.toContain(CANARY);
  });
});

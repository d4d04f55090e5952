// Escalation through the API: an entry that answers with the synthetic default (svc-1.13.0) and
// re-asks the questions under its thresholds to the trained tiny-tasks-1, on the real engine; then
// with a second Assay server on loopback as the remote; then a remote that hangs, answers 500 or
// answers what does not fit the questions.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { ensureSyntheticModels } from '../../src/commands/models-synth.js';
import { SystemOneResponseSchema, type Answer, type SystemOneResponse } from '../../src/protocol/index.js';
import {
  checkRegistry,
  loadRegistry,
  type EscalationSpec,
  type ModelEntry,
  type Registry,
} from '../../src/registry/registry.js';
import { announceEscalations, createModelPool } from '../../src/service/index.js';
import { auth, KEY, startServer, testKeys, type TestServer } from '../api/helpers.js';

const LINES = readFileSync('examples/tiny-tasks-heldout.jsonl', 'utf8')
  .trim()
  .split('\n')
  .slice(0, 24)
  .map((l) => JSON.parse(l) as { state: string; questions: Record<string, unknown> });
const BELOW = { noul: 0.7, choice: 0.5, score: 0.5 };
const KEY_ENV = 'ASSAY_H28_ESCALATION_TEST_KEY';

const entry = (escalate: EscalationSpec): ModelEntry => ({
  path: '',
  escalate,
  description: 'escalating (test)',
  release_date: '2026-11-25',
});

function registryWith(
  base: Registry,
  extra: Record<string, ModelEntry>,
  aliases: Record<string, string> = {},
): Registry {
  return checkRegistry(
    { default: base.default, aliases: { ...base.aliases, ...aliases }, models: { ...base.models, ...extra } },
    base.file,
  );
}

/** The certainty a threshold compares, written out here: noul max(p, 1 − p), choice and score their confidence. */
const sure = (a: Answer) => (a.type === 'noul' ? Math.max(a.noul, 1 - a.noul) : a.confidence);

/** The questions whose first answer is under its type's threshold in BELOW. */
const under = (answers: Record<string, Answer>) =>
  Object.keys(answers).filter((id) => sure(answers[id]!) < BELOW[answers[id]!.type]);

async function ask(app: AssayServer, model: string, line: (typeof LINES)[number], questions = line.questions) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/systemone',
    headers: auth(),
    payload: { state: line.state, model, questions },
  });
  return { status: res.statusCode, body: res.json() as SystemOneResponse };
}

/** The escalated counter of one model in /metrics text. */
async function metric(app: AssayServer, name: string, model: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const m = new RegExp(`^${name}\\{model="${model}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

function expectSame(a: Answer, b: Answer) {
  // The same model on another set of questions of the same state: float noise of another packed pass at most.
  expect(a.type).toBe(b.type);
  if (a.type === 'noul' && b.type === 'noul') expect(a.noul).toBeCloseTo(b.noul, 4);
  if (a.type !== 'noul' && b.type !== 'noul')
    for (const [k, p] of Object.entries(a.probabilities)) expect(p).toBeCloseTo(b.probabilities[k]!, 4);
}

describe('an escalating registry entry', () => {
  let registry: Registry;
  let app: AssayServer;
  let pool: ReturnType<typeof createModelPool>;
  let remote: TestServer;
  let remoteUrl: string;
  let hanging: Server;
  let hangingUrl: string;
  const warnings: string[] = [];

  beforeAll(async () => {
    const base = loadRegistry();
    await ensureSyntheticModels(base, () => {}, 'svc-1.13.0');
    await ensureSyntheticModels(base, () => {}, 'tiny-tasks-1');
    remote = await startServer();
    await remote.app.listen({ port: 0, host: '127.0.0.1' });
    remoteUrl = `http://127.0.0.1:${(remote.app.server.address() as AddressInfo).port}`;
    // Accepts and never answers; under /500 answers 500; under /misfit answers 200 with a noul
    // answer to every question (the wrong shape for choice and score).
    hanging = createServer((req, res) => {
      if (req.url?.startsWith('/500/')) res.writeHead(500).end('{"detail":"down"}');
      else if (req.url?.startsWith('/misfit/')) {
        let body = '';
        req.on('data', (d) => (body += d));
        req.on('end', () => {
          const ids = Object.keys((JSON.parse(body) as { questions: object }).questions);
          const answers = Object.fromEntries(ids.map((id) => [id, { type: 'noul', noul: 0.5 }]));
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ model: 'x', answers, usage: { input_tokens: 1, output_tokens: 0 } }));
        });
      }
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    process.env[KEY_ENV] = KEY;
    registry = registryWith(
      base,
      {
        'cascade-local': entry({ first: 'svc-1.13.0', second: 'tiny-tasks-1', below: BELOW }),
        'cascade-remote': entry({
          first: 'svc-1.13.0',
          second: { url: remoteUrl, model: 'svc-latest', api_key_env: KEY_ENV },
          below: BELOW,
        }),
        'cascade-hangs': entry({
          first: 'svc-1.13.0',
          second: { url: hangingUrl, model: 'svc-latest' },
          below: { noul: null },
          timeout_ms: 300,
        }),
        'cascade-hangs-strict': entry({
          first: 'svc-1.13.0',
          second: { url: hangingUrl, model: 'svc-latest' },
          below: { noul: null },
          timeout_ms: 300,
          on_failure: 'error',
        }),
        'cascade-500': entry({
          first: 'svc-1.13.0',
          second: { url: `${hangingUrl}/500`, model: 'svc-latest' },
          below: { noul: null, choice: null },
        }),
        'cascade-misfit': entry({
          first: 'svc-1.13.0',
          second: { url: `${hangingUrl}/misfit/`, model: 'svc-latest' },
          below: { noul: null, choice: null },
        }),
        'cascade-bad-key': entry({
          first: 'svc-1.13.0',
          second: { url: remoteUrl, model: 'svc-latest', api_key_env: `${KEY_ENV}_UNSET` },
          below: { noul: null },
        }),
      },
      { 'cascade-latest': 'cascade-local' },
    );
    pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: (_o, msg) => void warnings.push(msg) });
    await pool.load('svc-1.13.0');
    await pool.load('tiny-tasks-1');
    app = await buildServer({ registry, models: pool, keys: testKeys(), logging: false });
  }, 240_000);

  afterAll(async () => {
    await app?.close();
    await pool?.close();
    await remote?.close();
    hanging?.close();
    delete process.env[KEY_ENV];
  });

  it('escalates exactly the questions under their thresholds to the second local model, within the contract', async () => {
    const before = await metric(app, 'assay_escalated_questions_total', 'cascade-local');
    const escalated = { noul: 0, choice: 0, score: 0 };
    const kept = { noul: 0, choice: 0, score: 0 };
    for (const [n, line] of LINES.entries()) {
      // Asked by an alias too: the response names the entry's own id.
      const r = await ask(app, n % 2 ? 'cascade-latest' : 'cascade-local', line);
      expect(r.status).toBe(200);
      expect(SystemOneResponseSchema.safeParse(r.body).success).toBe(true);
      expect(r.body.model).toBe('cascade-local');
      expect(Object.keys(r.body.answers)).toEqual(Object.keys(line.questions));
      const first = (await ask(app, 'svc-1.13.0', line)).body;
      const up = under(first.answers);
      let secondTokens = 0;
      if (up.length) {
        const second = (
          await ask(app, 'tiny-tasks-1', line, Object.fromEntries(up.map((id) => [id, line.questions[id]])))
        ).body;
        secondTokens = second.usage.input_tokens;
        for (const id of up) expectSame(r.body.answers[id]!, second.answers[id]!);
      }
      for (const id of Object.keys(line.questions).filter((q) => !up.includes(q)))
        expect(r.body.answers[id]).toEqual(first.answers[id]);
      // usage adds both models' tokens: the first on every question, the second on the escalated ones.
      expect(r.body.usage.input_tokens).toBe(first.usage.input_tokens + secondTokens);
      for (const [id, a] of Object.entries(first.answers)) (up.includes(id) ? escalated : kept)[a.type]++;
    }
    // Each type holds both kinds, so the test tells a type's threshold that escalates all or none.
    for (const t of ['noul', 'choice', 'score'] as const) {
      expect(escalated[t], t).toBeGreaterThan(0);
      expect(kept[t], t).toBeGreaterThan(0);
    }
    expect((await metric(app, 'assay_escalated_questions_total', 'cascade-local')) - before).toBe(
      escalated.noul + escalated.choice + escalated.score,
    );
  }, 240_000);

  it('re-asks a second Assay server on loopback as the remote, with the key from the environment', async () => {
    let escalated = 0;
    for (const line of LINES.slice(0, 8)) {
      const r = await ask(app, 'cascade-remote', line);
      expect(r.status).toBe(200);
      expect(r.body.model).toBe('cascade-remote');
      const first = (await ask(app, 'svc-1.13.0', line)).body;
      const up = under(first.answers);
      if (!up.length) continue;
      escalated += up.length;
      const sub = Object.fromEntries(up.map((id) => [id, line.questions[id]]));
      const res = await remote.app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: auth(),
        payload: { state: line.state, model: 'svc-latest', questions: sub },
      });
      const theirs = res.json() as SystemOneResponse;
      for (const id of up) expectSame(r.body.answers[id]!, theirs.answers[id]!);
      expect(r.body.usage.input_tokens).toBe(first.usage.input_tokens + theirs.usage.input_tokens);
    }
    expect(escalated).toBeGreaterThan(0);
    expect(await metric(app, 'assay_escalated_questions_total', 'cascade-remote')).toBe(escalated);
    expect(await metric(app, 'assay_escalation_failures_total', 'cascade-remote')).toBe(0);
  }, 120_000);

  it('a second model that misses its deadline: the first answers stand (default), or 503 with on_failure "error"', async () => {
    const line = LINES[0]!;
    const first = (await ask(app, 'svc-1.13.0', line)).body;
    const started = performance.now();
    const r = await ask(app, 'cascade-hangs', line);
    expect(r.status).toBe(200);
    expect(r.body.model).toBe('cascade-hangs');
    expect(r.body.answers).toEqual(first.answers);
    expect(r.body.usage).toEqual(first.usage);
    expect(performance.now() - started).toBeLessThan(30_000); // bounded by the 300 ms deadline, not the hanging peer
    expect(await metric(app, 'assay_escalation_failures_total', 'cascade-hangs')).toBe(1);
    const strict = await app.inject({
      method: 'POST',
      url: '/v1/systemone',
      headers: auth(),
      payload: { state: line.state, model: 'cascade-hangs-strict', questions: line.questions },
    });
    expect(strict.statusCode).toBe(503);
    expect(strict.json().detail).toContain(
      'cascade-hangs-strict: the second model did not answer (no answer within 300 ms)',
    );
    // A missing key fails the re-ask the same way (the first answers stand).
    const noKey = await ask(app, 'cascade-bad-key', line);
    expect(noKey.status).toBe(200);
    expect(noKey.body.answers).toEqual(first.answers);
    expect(await metric(app, 'assay_escalation_failures_total', 'cascade-bad-key')).toBe(1);
    // A remote that answers 500, or answers that do not fit the questions: the first answers stand.
    for (const id of ['cascade-500', 'cascade-misfit']) {
      const r = await ask(app, id, line);
      expect(r.status, id).toBe(200);
      expect(r.body.answers, id).toEqual(first.answers);
      expect(r.body.usage, id).toEqual(first.usage);
      expect(await metric(app, 'assay_escalation_failures_total', id), id).toBe(1);
    }
  }, 60_000);

  it('the startup log says that a remote second model breaks zero data retention', () => {
    expect(
      warnings.filter(
        (w) => w.includes('ESCALATING TO A REMOTE MODEL') && w.includes('zero data retention does not hold'),
      ),
    ).toHaveLength(6);
    expect(warnings).toContain('the remote model API key variable is not set: escalations will fail');
    const lines: string[] = [];
    announceEscalations(registryWith(loadRegistry(), {}), {
      info: (_o, m) => void lines.push(m),
      warn: (_o, m) => void lines.push(m),
    });
    expect(lines).toEqual(['escalating model: uncertain questions go to a second local model']); // the shipped tiny-cascade-1
  });

  it('the registry refuses an escalation it cannot run, naming the field', () => {
    const base = loadRegistry();
    expect(() => registryWith(base, { x: entry({ first: 'nope', second: 'tiny-tasks-1', below: {} }) })).toThrow(
      'models.x.escalate.first: expected a model of this registry, got "nope"',
    );
    expect(() =>
      registryWith(base, { x: entry({ first: 'tiny-cascade-1', second: 'tiny-tasks-1', below: {} }) }),
    ).toThrow('models.x.escalate.first: expected a model that does not escalate itself');
    expect(() =>
      registryWith(base, { x: entry({ first: 'svc-latest', second: { url: 'ftp://x', model: 'm' }, below: {} }) }),
    ).toThrow('models.x.escalate.second.url: expected an http(s) URL');
    expect(() =>
      registryWith(base, { x: entry({ first: 'svc-latest', second: 'tiny-tasks-1', below: { noul: 2 } }) }),
    ).toThrow('models.x.escalate.below.noul: expected a certainty between 0 and 1');
    expect(() =>
      registryWith(base, {
        x: entry({ first: 'svc-latest', second: 'tiny-tasks-1', below: {}, on_failure: 'retry' as 'first' }),
      }),
    ).toThrow('models.x.escalate.on_failure: Invalid option: expected one of "first"|"error"');
  });
});

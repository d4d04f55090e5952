// OpenTelemetry traces of `assay serve`, exported over OTLP/HTTP (JSON encoding) to a real endpoint
// this test runs: a request is one trace (the caller's traceparent honoured) with spans for its
// admission, its evaluation and the engine's stages (planning, queue wait, each pass, readout: timed
// in the engine thread, made spans here); batch lines get theirs; no caller content reaches any
// attribute, event or status; and tracing is off unless the OTEL_* variables turn it on.
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { startServe, tinyRegistryFile, type ServeProcess } from '../serve-process.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver: POST /v1/traces with JSON bodies, kept as they came. */
async function receiver(): Promise<{ url: string; bodies: string[]; spans(): OtlpSpan[]; close(): Promise<void> }> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(text);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    spans: () =>
      bodies.flatMap((b) =>
        (JSON.parse(b) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap((r) =>
          r.scopeSpans.flatMap((s) => s.spans),
        ),
      ),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const CANARY = 'CANARY7f3a';
const KEY = 'sk-trace-key';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

function canaryRequest() {
  return {
    state: `The ${CANARY} parcel was late.`,
    model: 'svc-latest',
    questions: {
      [`late_${CANARY}`]: { type: 'noul', instructions: `Was the ${CANARY} parcel late?` },
      topic: {
        type: 'choice',
        instructions: `Topic of ${CANARY}?`,
        criteria: { [`delivery_${CANARY}`]: `about ${CANARY}`, billing: null },
      },
    },
  };
}

let registry: string;
beforeAll(async () => {
  const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  registry = tinyRegistryFile(mkdtempSync(join(tmpdir(), 'assay-trace-')), modelDir);
});

describe('tracing on (OTEL_TRACES_EXPORTER=otlp, OTLP/HTTP JSON)', () => {
  let otlp: Awaited<ReturnType<typeof receiver>>;
  let server: ServeProcess;
  beforeAll(async () => {
    otlp = await receiver();
    server = await startServe(registry, [], {
      ASSAY_API_KEYS: KEY,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: 'assay-test',
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await otlp?.close();
  });

  it("a request is one trace under the caller's traceparent: request, admission, evaluate, planning, queue wait, each pass, readout", async () => {
    expect(server.out()).toContain('tracing on');
    const res = await fetch(`${server.base}/v1/systemone?q=${CANARY}`, {
      method: 'POST',
      headers: { ...auth, traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
      body: JSON.stringify(canaryRequest()),
    });
    expect(res.status).toBe(200);
    const names = () =>
      otlp
        .spans()
        .filter((s) => s.traceId === TRACE_ID)
        .map((s) => s.name);
    await vi.waitFor(() => expect(names()).toContain('request'), { timeout: 30_000, interval: 50 });
    const spans = otlp.spans().filter((s) => s.traceId === TRACE_ID);
    for (const name of [
      'request',
      'assay.admission',
      'assay.evaluate',
      'assay.planning',
      'assay.queue_wait',
      'assay.engine_pass',
      'assay.readout',
    ])
      expect(names(), name).toContain(name);
    // The engine's stages hang under the evaluation; the evaluation under the request.
    const byName = (n: string) => spans.filter((s) => s.name === n);
    const evaluate = byName('assay.evaluate')[0]!;
    for (const n of ['assay.planning', 'assay.queue_wait', 'assay.engine_pass', 'assay.readout'])
      for (const s of byName(n)) expect(s.parentSpanId, n).toBe(evaluate.spanId);
    const passes = byName('assay.engine_pass');
    expect(passes.length).toBeGreaterThanOrEqual(1);
    expect(passes.every((p) => p.attributes?.some((a) => a.key === 'assay.tokens'))).toBe(true);
    const request = byName('request')[0]!;
    expect(request.attributes?.find((a) => a.key === 'url.path')?.value.stringValue).toBe('/v1/systemone');
  });

  it('batch lines get a trace of their own; an invalid request and a 404 leave no content either', async () => {
    const line = JSON.stringify({ custom_id: `id-${CANARY}`, body: canaryRequest() });
    const created = await fetch(`${server.base}/v1/batches`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/jsonl' },
      body: `${line}\n`,
    });
    expect(created.status).toBe(200);
    const bad = await fetch(`${server.base}/v1/systemone`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ ...canaryRequest(), questions: { q: { type: CANARY } } }),
    });
    expect(bad.status).toBe(422);
    expect((await fetch(`${server.base}/v1/${CANARY}`, { headers: auth })).status).toBe(404);
    await vi.waitFor(() => expect(otlp.spans().map((s) => s.name)).toContain('assay.batch_lines'), {
      timeout: 60_000,
      interval: 100,
    });
    await vi.waitFor(
      () =>
        expect(
          otlp.spans().some((s) => s.attributes?.some((a) => a.value.intValue === 404 || a.value.intValue === '404')),
        ).toBe(true),
      { timeout: 30_000, interval: 50 },
    );
    // Nothing the callers sent, anywhere in what was exported: attributes, events, statuses, names.
    for (const body of otlp.bodies) expect(body).not.toContain(CANARY);
  }, 120_000);
});

describe('tracing off', () => {
  it('is off by default, and OTEL_SDK_DISABLED=true wins over an endpoint: no span leaves the process', async () => {
    const otlp = await receiver();
    const plain = await startServe(registry, [], { ASSAY_API_KEYS: KEY });
    const disabled = await startServe(registry, [], {
      ASSAY_API_KEYS: KEY,
      OTEL_SDK_DISABLED: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    try {
      for (const s of [plain, disabled]) {
        const res = await fetch(`${s.base}/v1/systemone`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify(canaryRequest()),
        });
        expect(res.status).toBe(200);
        expect(s.out()).not.toContain('tracing on');
      }
    } finally {
      // Stopped (an SDK would flush on shutdown): after both exits, the endpoint has heard nothing.
      await plain.stop();
      await disabled.stop();
    }
    expect(otlp.bodies).toEqual([]);
    await otlp.close();
  }, 180_000);
});

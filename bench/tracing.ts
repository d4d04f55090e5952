// Tracing's cost: two `assay serve` processes on the tiny model, one with traces exported over
// OTLP/HTTP (to a sink in this process that reads and drops them), one without; sequential requests
// sent to each in interleaved rounds (the order swapped each round), so load on shared cores falls
// on both alike. p50 and p99 of the client's latency, on vs off.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { table, type BenchContext, type SectionResult } from './lib/context.js';

const KEY = 'bench-tracing-key';

async function serve(
  registry: string,
  threads: number,
  env: Record<string, string>,
): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['bin/assay.js', 'serve', '--port', '0', '--threads', String(threads), '--registry', registry],
    {
      env: {
        ...process.env,
        ASSAY_API_KEYS: KEY,
        ASSAY_LOG_FORMAT: 'json',
        ASSAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'assay-bench-trace-')),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const base = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /listening at (http:\/\/[\d.:]+)/i.exec(out);
      if (m && /"msg":"ready"/.test(out)) return resolve(m[1]!);
      if (child.exitCode !== null) return reject(new Error(`serve exited: ${out}`));
      setTimeout(check, 100);
    };
    check();
  });
  return { base, child };
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

export async function tracingSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const dir = await ctx.model('tiny', 'fp32');
  const registryDir = mkdtempSync(join(tmpdir(), 'assay-bench-trace-reg-'));
  const registry = join(registryDir, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-1.13.0',
      models: { 'svc-1.13.0': { path: dir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' } },
      aliases: { 'svc-latest': 'svc-1.13.0' },
    }),
  );
  let spans = 0;
  const sink = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      spans++;
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const off = await serve(registry, ctx.threads, {});
  const on = await serve(registry, ctx.threads, {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  });
  const rounds = ctx.quick ? 3 : 10;
  const perRound = ctx.quick ? 20 : 50;
  const times: Record<'on' | 'off', number[]> = { on: [], off: [] };
  let n = 0;
  const one = async (base: string) => {
    const body = JSON.stringify({
      state: `Ticket ${n++ % 40}: the parcel arrived late and the box was damaged.`,
      model: 'svc-latest',
      questions: {
        late: { type: 'noul', instructions: 'Was it late?' },
        topic: { type: 'choice', instructions: 'Topic?', criteria: { delivery: null, billing: null } },
        severity: { type: 'score', instructions: 'How severe?', criteria: ['low', 'mid', 'high'] },
      },
    });
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    return performance.now() - t0;
  };
  try {
    // Warm both (model load, first passes).
    for (let i = 0; i < 10; i++) await Promise.all([one(off.base), one(on.base)]);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
      for (const which of order) {
        const base = which === 'on' ? on.base : off.base;
        for (let i = 0; i < perRound; i++) times[which].push(await one(base));
      }
      ctx.log(
        `round ${r + 1}/${rounds}: p50 off ${pct(times.off, 0.5).toFixed(1)} ms, on ${pct(times.on, 0.5).toFixed(1)} ms`,
      );
    }
  } finally {
    off.child.kill('SIGTERM');
    on.child.kill('SIGTERM');
    sink.close();
  }
  const p50 = { off: pct(times.off, 0.5), on: pct(times.on, 0.5) };
  const p99 = { off: pct(times.off, 0.99), on: pct(times.on, 0.99) };
  const overhead = p50.on / p50.off - 1;
  return {
    id: 'tracing',
    title: 'Tracing on (OTLP/HTTP) vs off',
    config: { model: 'tiny fp32', rounds, perRound, threads: ctx.threads, questions: 3 },
    results: { p50, p99, overhead, exports: spans },
    targets: [
      {
        name: 'tracing overhead at p50',
        goal: '<= 3%',
        value: overhead * 100,
        unit: '%',
        met: overhead <= 0.03,
      },
    ],
    notes: [`${spans} OTLP exports received from the traced server`],
    markdown: table(
      ['', 'p50 ms', 'p99 ms', 'requests'],
      [
        ['off', p50.off.toFixed(2), p99.off.toFixed(2), String(times.off.length)],
        ['on', p50.on.toFixed(2), p99.on.toFixed(2), String(times.on.length)],
      ],
    ),
    seconds: (performance.now() - started) / 1000,
  };
}

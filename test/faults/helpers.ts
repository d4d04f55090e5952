// Shared parts of the fault suite: interactive clients that keep asking while a fault lasts and
// record what they saw, batch lines, polling for an event, and the figures a fault's run measured
// (latencies, times to recover), printed and kept in .test-output/faults.json for docs/operations.md.
// Figures are never asserted: they are timings (the shared cores make them noisy).
import { appendFileSync, mkdirSync } from 'node:fs';
import { mixedRequest } from '../api/helpers.js';

/**
 * The per-key rate limit the fault suite's servers run with: the interactive clients send back to
 * back under one key, and on a fast machine they pass the default requests-per-minute, whose 429s
 * would read as failures the fault caused (they did: model-files and postgres-outage in a full run).
 */
export const UNLIMITED_RPM = '100000000';

export interface Sample {
  status: number;
  ms: number;
  /** The error's detail, for a status other than 200. */
  detail?: unknown;
  retryAfter?: string | null;
  /** A network error (connection refused, reset): the server did not answer at all. */
  network?: string;
}

/** `concurrency` clients each sending one-question requests back to back until stopped. */
export function interactiveLoad(base: string, key: string, concurrency = 2) {
  const samples: Sample[] = [];
  let running = true;
  const one = async (i: number): Promise<void> => {
    for (let n = 0; running; n++) {
      const req = mixedRequest(`Ticket ${i}-${n % 7}: the invoice was paid on time.`);
      const started = performance.now();
      try {
        const res = await fetch(`${base}/v1/systemone`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...req, questions: { paid: req.questions.paid } }),
        });
        const text = await res.text();
        const s: Sample = { status: res.status, ms: performance.now() - started };
        if (res.status !== 200) {
          s.detail = JSON.parse(text).detail;
          s.retryAfter = res.headers.get('retry-after');
        }
        samples.push(s);
      } catch (e) {
        samples.push({ status: 0, ms: performance.now() - started, network: String((e as Error).cause ?? e) });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const loops = Array.from({ length: concurrency }, (_, i) => one(i));
  return {
    samples,
    async stop(): Promise<Sample[]> {
      running = false;
      await Promise.all(loops);
      return samples;
    },
  };
}

/** A percentile of the answered requests' latencies, ms. */
export function percentile(samples: Sample[], p: number): number {
  const ms = samples
    .filter((s) => s.status === 200)
    .map((s) => s.ms)
    .sort((a, b) => a - b);
  if (ms.length === 0) return NaN;
  return ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))]!;
}

/** `n` one-question batch lines, `perState` of them sharing a state. */
export function batchLines(n: number, perState = 10, prefix = 'f') {
  const ids = ['paid', 'channel', 'punctuality'] as const;
  return Array.from({ length: n }, (_, i) => {
    const req = mixedRequest(
      `Order ${prefix}${Math.floor(i / perState)}: delivered late, the customer asked for a refund.`,
    );
    const id = ids[i % 3]!;
    return { custom_id: `${prefix}-${i}`, body: { ...req, questions: { [id]: req.questions[id] } } };
  });
}

/** Polls `check` until it holds (every `everyMs`); fails naming `what` after `timeoutMs`. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The figures a fault's run measured: printed, and appended to .test-output/faults.json (docs/operations.md, Faults). */
export function figures(fault: string, facts: Record<string, unknown>): void {
  const line = { fault, at: new Date().toISOString(), ...facts };
  console.log(`fault figures: ${JSON.stringify(line)}`);
  mkdirSync('.test-output', { recursive: true });
  appendFileSync('.test-output/faults.json', `${JSON.stringify(line)}\n`);
}

/** /healthz as JSON, with its status code. */
export async function health(base: string): Promise<{ code: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/healthz`);
  return { code: res.status, body: (await res.json()) as Record<string, unknown> };
}

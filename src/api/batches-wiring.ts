// Batch jobs on a server: the service is given the server's models, each owner's permissions and
// token budget (its lines wait for the budget to refill, never refused), the batch metrics, and
// starts once the server is ready; it stops (lines in flight given back) when the server closes.
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { Batches } from '../service/index.js';
import { keyAllows, limitsOf, rateKey } from './admission.js';
import type { ApiKey } from './auth.js';
import type { ApiContext } from './context.js';

export function wireBatches(app: FastifyInstance, ctx: ApiContext, batches: Batches): void {
  const owners = new Map<string, ApiKey>(ctx.keys.keys.map((k) => [rateKey(k), k]));
  batches.attach(ctx, {
    allows: (owner, name, id) => {
      const key = owners.get(owner);
      return key !== undefined && keyAllows(key, name, id);
    },
    pacer: {
      waitMs: (owner, tokens) => {
        const key = owners.get(owner);
        return key ? ctx.limiter.tokenWaitMs(owner, tokens, limitsOf(key)) : 0;
      },
      charge: (owner, tokens) => {
        const key = owners.get(owner);
        if (key) ctx.limiter.charge(owner, tokens, limitsOf(key));
      },
    },
    onLine: ({ ok, inputTokens }) => ctx.metrics.batchLine(ok, inputTokens),
    onError: (err) => app.log.error({ err }, 'batch runner'),
    // A store fault is said once when it begins and once when it ends (the runner waits quietly between).
    onStoreChange: (now, was) => {
      if (now.state !== 'ok') {
        faults.inc({ fault: now.state });
        app.log.error(
          { batch_store: now.state, reason: now.reason },
          `batch store ${now.state}: batch lines wait, interactive requests are unaffected`,
        );
      } else
        app.log.info(
          { batch_store: 'ok', was: was.state, down_ms: Date.now() - (was.since ?? Date.now()) },
          'batch store back: batch lines resume',
        );
    },
  });
  const faults = new Counter({
    name: 'assay_batch_store_faults_total',
    help: 'Times the batch store became unreachable (PostgreSQL away) or full (the data directory), by fault',
    labelNames: ['fault'] as const,
    registers: [ctx.metrics.registry],
  });
  new Gauge({
    name: 'assay_batch_store_up',
    help: 'Whether the batch store answers (0 while PostgreSQL is away, the data directory is full or its thread restarts; /healthz says why)',
    registers: [ctx.metrics.registry],
    collect() {
      this.set(batches.health().state === 'ok' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'assay_batch_store_fault',
    help: 'The batch store fault now (1): unreachable, full or restarting',
    labelNames: ['fault'] as const,
    registers: [ctx.metrics.registry],
    collect() {
      this.reset();
      const { state } = batches.health();
      if (state !== 'ok') this.set({ fault: state }, 1);
    },
  });
  new Gauge({
    name: 'assay_batches',
    help: 'Batches in the store, by status',
    labelNames: ['status'] as const,
    registers: [ctx.metrics.registry],
    async collect() {
      this.reset();
      const counts = await batches.counts().catch(() => undefined);
      for (const [status, n] of Object.entries(counts?.batches ?? {})) this.set({ status }, n ?? 0);
    },
  });
  new Gauge({
    name: 'assay_batch_lines_pending',
    help: 'Batch lines waiting to run (leased ones not counted)',
    registers: [ctx.metrics.registry],
    async collect() {
      const counts = await batches.counts().catch(() => undefined);
      this.set(counts?.pending ?? 0);
    },
  });
  app.addHook('onReady', () => batches.start());
  app.addHook('onClose', () => batches.close());
}

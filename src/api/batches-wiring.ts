// Batch jobs on a server: the service is given the server's models, each owner's permissions and
// token budget (its lines wait for the budget to refill, never refused), the batch metrics, and
// starts once the server is ready; it stops (lines in flight given back) when the server closes.
import type { FastifyInstance } from 'fastify';
import { Gauge } from 'prom-client';
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

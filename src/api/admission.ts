// onRequest admission of the v1 routes: bearer key (401), then the key's rate limits (429).
// Runs before the body is read, so rejected requests cost no parsing.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKey } from './auth.js';
import type { ApiContext } from './context.js';
import { RateLimitedError, UnauthenticatedError } from './api-error.js';
import { retryHeaders } from '../protocol/index.js';
import { inSpan } from '../service/index.js';

export function limitsOf(key: ApiKey) {
  return { requestsPerMinute: key.requestsPerMinute, inputTokensPerSecond: key.inputTokensPerSecond };
}

export function rateKey(key: ApiKey): string {
  return key.hash.toString('hex');
}

/**
 * The key check of a route, and its request-per-minute and token-budget admission unless `rate` is
 * false (reads of batch jobs: polling a batch is not an evaluation).
 */
export function admission(ctx: ApiContext, { rate = true }: { rate?: boolean } = {}) {
  return async function admission(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    return inSpan('admission', { 'assay.rate_limited_route': rate }, async () => admit(req));
  };

  async function admit(req: FastifyRequest): Promise<void> {
    const header = req.headers.authorization;
    const key = ctx.keys.authenticate(header);
    if (!key) {
      throw new UnauthenticatedError(header ? 'Invalid API key' : 'Not authenticated', {
        'www-authenticate': 'Bearer',
      });
    }
    req.apiKey = key;
    if (!rate) return;
    const admission = ctx.limiter.admit(rateKey(key), limitsOf(key));
    if (admission.retryAfterMs > 0) {
      const what = admission.limit === 'requests_per_minute' ? 'requests per minute' : 'input tokens per second';
      const headers = retryHeaders(admission.retryAfterMs);
      throw new RateLimitedError(`Rate limit exceeded (${what}); retry after ${headers['retry-after-ms']} ms`, headers);
    }
  }
}

/** Whether a key may use a model name (alias or versioned id) that resolves to `id`. */
export function keyAllows(key: ApiKey, name: string, id: string): boolean {
  return !key.models || key.models.includes(name) || key.models.includes(id);
}

// The server's own state on the instance (typed in context.ts): what the routes share as
// `app.assay`, the per-request decorations, and the shutdown flag, set once closing begins.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiContext } from '../context.js';

async function state(app: FastifyInstance, parts: Omit<ApiContext, 'draining'>): Promise<void> {
  let draining = false;
  app.decorateRequest('apiKey', null);
  app.decorateRequest('facts', null);
  app.decorate('assay', { ...parts, draining: () => draining });
  app.addHook('preClose', async () => {
    draining = true;
  });
}

/** On the server itself: every hook and route reads `app.assay`. */
export const serverState = fp(state, { name: 'assay-state' });

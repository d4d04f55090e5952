// The server's own state on the instance (typed in context.ts): what the routes share as
// `app.assay`, the per-request decorations, and the shutdown flag, set once closing begins.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiContext } from '../context.js';

async function state(
  app: FastifyInstance,
  { registryNow, ...parts }: Omit<ApiContext, 'draining' | 'registry'> & { registryNow: () => ApiContext['registry'] },
): Promise<void> {
  let draining = false;
  app.decorateRequest('apiKey', null);
  app.decorateRequest('facts', null);
  app.decorateRequest('sentOrder', null);
  // `registry` reads the current one: a registry reload replaces it under the routes.
  const assay: ApiContext = {
    ...parts,
    get registry() {
      return registryNow();
    },
    draining: () => draining,
  };
  app.decorate('assay', assay);
  app.addHook('preClose', async () => {
    draining = true;
  });
}

/** On the server itself: every hook and route reads `app.assay`. */
export const serverState = fp(state, { name: 'assay-state' });

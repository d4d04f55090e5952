// 404 and 405 as FastAPI answers them: the methods of every fixed path are recorded as routes are
// added, so a known path asked with another method gets 405 with Allow, anything else 404.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** Answers a request no route took: 405 (with Allow) for a known path, else 404. */
    notFound(req: FastifyRequest, reply: FastifyReply): FastifyReply;
  }
}

async function notFoundPlugin(app: FastifyInstance): Promise<void> {
  // The methods of every fixed path, as the routes register them (for 405 vs 404).
  const known = new Map<string, string[]>();
  app.addHook('onRoute', (route) => {
    if (/[:*]/.test(route.url)) return;
    known.set(route.url, [...(known.get(route.url) ?? []), ...[route.method].flat()]);
  });
  /** 405 (with Allow) for a path a route answers with another method, else 404, as FastAPI answers them. */
  const notFound = (req: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const allowed = known.get(req.url.split('?')[0] ?? '');
    if (allowed && !allowed.includes(req.method)) {
      return reply.code(405).header('allow', allowed.join(', ')).send({ detail: 'Method Not Allowed' });
    }
    return reply.code(404).send({ detail: 'Not Found' });
  };
  app.decorate('notFound', notFound);
  app.setNotFoundHandler((req, reply) => notFound(req, reply));
}

/** On the server itself: it must see every route, and its handler answers for all of them. */
export const notFoundHandling = fp(notFoundPlugin, { name: 'assay-not-found' });

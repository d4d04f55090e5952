// Who may reach the server from a browser: a Host this server answers to (DNS rebinding guard),
// an Origin that is its own or on the CORS allowlist (anything else 403, preflights included),
// and CORS headers for the allowlisted origins (none by default). The rules: common/hosts.ts.
import type { FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import fp from 'fastify-plugin';
import { HostForbiddenError, OriginForbiddenError } from '../api-error.js';
import { hostAllowed, originAllowed, type AllowedHosts } from '../../common/index.js';

export interface OriginsOptions {
  allowedHosts: AllowedHosts;
  /** Origins (`scheme://host[:port]`, already normalised) browser apps may call from; `*`: any. Empty: CORS off. */
  corsOrigins: readonly string[];
}

/** Request headers a browser app may send; response headers it may read. */
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Mcp-Session-Id', 'Mcp-Protocol-Version', 'Last-Event-ID'];
const EXPOSED_HEADERS = ['x-request-id', 'x-typesafe-request-id', 'retry-after', 'retry-after-ms', 'server-timing'];

/** A header value as the logs-free detail may quote it: printable, at most 100 characters. */
const quoted = (v: string) => JSON.stringify(v.replace(/[^\x20-\x7e]/g, '?').slice(0, 100));

async function origins(app: FastifyInstance, options: OriginsOptions): Promise<void> {
  const { allowedHosts, corsOrigins } = options;
  app.addHook('onRequest', async (req) => {
    const host = req.headers.host;
    if (!hostAllowed(host, allowedHosts)) {
      throw new HostForbiddenError(
        `Host ${host ? quoted(host) : '(none)'} is not allowed: send the request to localhost, a ` +
          `loopback address or a name the operator allowed (--allowed-hosts)`,
      );
    }
    const origin = req.headers.origin;
    if (!originAllowed(origin, host, corsOrigins)) {
      throw new OriginForbiddenError(
        `Origin ${quoted(origin!)} is not allowed: this server answers browser requests from its own origin and the origins in --cors-origins`,
      );
    }
  });
  if (corsOrigins.length === 0) return;
  await app.register(cors, {
    origin: corsOrigins.includes('*') ? '*' : [...corsOrigins],
    methods: ['GET', 'POST', 'DELETE'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    // Keys travel in Authorization, never cookies: no credentialed CORS, so `*` is safe where listed.
    credentials: false,
    maxAge: 600,
  });
}

/** On the server itself: every route and unrouted request passes its hook. */
export const originChecks = fp(origins, { name: 'assay-origins', dependencies: ['assay-requests', 'assay-errors'] });

// The timeouts that close slow and hostile clients' connections, and what such a client reads:
// - headers (--headers-timeout-ms) and the whole request (--request-timeout-ms): Node's own
//   checks, run every second here rather than every 30 s, answered with a JSON 408 naming the
//   setting (Fastify's default writes a body of another shape);
// - an idle keep-alive connection (--keep-alive-timeout-ms): closed;
// - a response that makes no progress to its client (--send-timeout-ms: a client that stopped
//   reading, or reads a byte a second): the connection is cut, and so are the response's buffers.
//   A request still being evaluated shows no progress either: it is left to its deadline.
// Each cut is counted (assay_http_connections_cut_total{reason}) and logged, without content.
import type { Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Metrics } from './metrics.js';

export interface ConnectionTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  sendTimeoutMs: number;
}

export type CutReason = 'headers_timeout' | 'request_timeout' | 'send_timeout' | 'bad_request';

/** The response a socket is serving now (Node's own field), if any. */
const serving = (socket: Socket) =>
  (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;

/** Fastify's (and Node's) options for the timeouts, and the handler of a client's bad or late request. */
export function connectionOptions(
  t: ConnectionTimeouts,
  cut: (reason: CutReason) => void,
): Pick<FastifyServerOptions, 'requestTimeout' | 'keepAliveTimeout' | 'clientErrorHandler'> & {
  http: { headersTimeout: number; connectionsCheckingInterval: number };
} {
  // Node refuses a headers timeout past the request's.
  const headersTimeout = Math.min(t.headersTimeoutMs, t.requestTimeoutMs);
  return {
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    // Node checks both every 30 s by default: a trickling connection would stay up to 30 s past its timeout.
    http: {
      headersTimeout,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      // The client closed its side mid-request: nothing to answer, nothing cut; the socket is ours to end.
      if (err.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
      const late = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      // Headers complete: the request was being received (its body); else its headers were late.
      const reason: CutReason = !late ? 'bad_request' : serving(socket) ? 'request_timeout' : 'headers_timeout';
      cut(reason);
      this.log.info({ reason, code: err.code }, 'connection closed');
      const [status, body] = late
        ? [
            '408 Request Timeout',
            reason === 'headers_timeout'
              ? `The request's headers did not arrive within ${headersTimeout} ms (--headers-timeout-ms)`
              : `The request did not arrive within ${t.requestTimeoutMs} ms (--request-timeout-ms)`,
          ]
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? ['431 Request Header Fields Too Large', 'The request headers are too large']
          : ['400 Bad Request', 'The request is not valid HTTP'];
      const json = JSON.stringify({ detail: body });
      if (socket.writable)
        socket.write(
          `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
        );
      socket.destroy();
    },
  };
}

/** The send timeout on the app's server: a connection whose response makes no progress for sendTimeoutMs is cut. */
export function guardSends(app: FastifyInstance, t: ConnectionTimeouts, metrics: Metrics): void {
  // With a listener, Node hands every inactive socket here instead of destroying it (net.Socket
  // counts a write the kernel is still taking as progress: only a stalled one times out).
  app.server.setTimeout(t.sendTimeoutMs, (socket: Socket) => {
    const res = serving(socket);
    // Still being evaluated (nothing written yet): the request's deadline bounds it, not this.
    if (res && !res.headersSent) return;
    if (res && !res.writableFinished) {
      metrics.connectionCut('send_timeout');
      app.log.info(
        { reason: 'send_timeout', ms: t.sendTimeoutMs },
        'connection closed: its response made no progress (--send-timeout-ms)',
      );
    }
    socket.destroy();
  });
}

// The logger's options (Fastify takes them at construction, so this is options, not a plugin):
// zero data retention by serializers and redaction, and the request id every log line carries.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { contentFree } from '../error-table.js';

/** A pino destination: anything with write(line). */
export interface LogStream {
  write(line: string): void;
}

const REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The client's x-request-id when it is a plain token, else a fresh one: Fastify's genReqId. */
export function requestId(req: IncomingMessage): string {
  const h = req.headers['x-request-id'];
  return typeof h === 'string' && REQUEST_ID.test(h) ? h : `req_${randomUUID().replaceAll('-', '')}`;
}

/** Stack frames only, plus the message of content-free (engine, runtime) errors: other messages may quote request content. */
function errorSerializer(err: Error & { code?: string }) {
  const frames = (err.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l));
  return {
    type: err.name,
    code: err.code,
    ...(contentFree(err) ? { message: err.message } : {}),
    frames: frames.join('\n'),
  };
}

export function loggerOptions(
  level = 'info',
  stream?: LogStream,
  format: 'json' | 'pretty' = 'json',
): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  // pino-pretty runs as pino's transport (a worker thread), so formatting costs the event loop nothing.
  const pretty = format === 'pretty' && !stream;
  const options = {
    level,
    ...(stream ? { stream } : {}),
    ...(pretty
      ? {
          transport: {
            target: 'pino-pretty',
            options: {
              colorize: process.stdout.isTTY === true,
              translateTime: 'SYS:HH:MM:ss.l',
              ignore: 'pid,hostname',
            },
          },
        }
      : {}),
    // Zero data retention: requests are logged by id, route, status, timing and counts only.
    serializers: {
      req: (req: FastifyRequest) => ({ id: req.id, method: req.method }),
      res: (res: FastifyReply) => ({ statusCode: res.statusCode }),
      err: errorSerializer,
    },
    redact: {
      paths: [
        'headers',
        'body',
        'state',
        'instructions',
        'criteria',
        'questions',
        '*.headers',
        '*.body',
        '*.state',
        '*.instructions',
        '*.criteria',
        '*.questions',
      ],
      censor: '[redacted]',
    },
  };
  return options as unknown as Exclude<FastifyServerOptions['logger'], boolean | undefined>;
}

// An oversized body gets a 413 the client can read: the server answers, then drains a bounded amount
// before closing, instead of resetting the connection under a client that is still sending.
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, startServer, type TestServer } from './helpers.js';

let s: TestServer;
let port: number;
beforeAll(async () => {
  s = await startServer({ logging: false });
  const url = new URL(await s.app.listen({ host: '127.0.0.1', port: 0 }));
  port = Number(url.port);
});
afterAll(async () => {
  await s?.close();
});

/** Sends `total` bytes in 1 MiB chunks with a real client; resolves with what the client saw. */
function send(total: number, chunked: boolean): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { ...auth() };
    if (!chunked) headers['content-length'] = String(total);
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/systemone', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', (e) => resolve({ status: res.statusCode, body, error: e.message }));
    });
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('413', () => {
  for (const chunked of [false, true]) {
    it(`a 60 MB body (${chunked ? 'chunked' : 'with content-length'}) is answered 413 with its JSON detail, not a reset`, async () => {
      const r = await send(60 * 2 ** 20, chunked);
      expect(r.error).toBeUndefined();
      expect(r.status).toBe(413);
      expect(JSON.parse(r.body!)).toEqual({ detail: `Request body is larger than ${8 * 1024 * 1024} bytes` });
    });
  }
});

/** Like python-requests or curl: writes the whole request first, then reads the response. */
function sendThenRead(total: number): Promise<{ response: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let response = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (response += d));
    socket.on('error', (e) => resolve({ response, error: (e as NodeJS.ErrnoException).code }));
    socket.on('close', () => resolve({ response }));
    socket.on('connect', () => {
      socket.pause(); // read nothing until the whole body is written
      socket.write(
        `POST /v1/systemone HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth().authorization}\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`,
      );
      const chunk = Buffer.alloc(1 << 20, 0x20);
      let sent = 0;
      const pump = (): void => {
        while (sent < total) {
          sent += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
        socket.resume();
      };
      pump();
    });
  });
}

describe('413 to a client that sends everything before reading', () => {
  it('60 MB: the status line and the JSON detail arrive', async () => {
    const r = await sendThenRead(60 * 2 ** 20);
    expect(r.error).toBeUndefined();
    expect(r.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(r.response).toContain('{"detail":"Request body is larger than');
  });
});

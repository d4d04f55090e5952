// Big bodies go to the body worker as they arrive, a bounded number at a time (here 2; the others
// wait unread). A client cannot tell: concurrent big bodies each get their own answer, the same as
// the same request sent small; a body that arrives in many small TCP segments (multi-byte
// characters cut between them), or chunked with no Content-Length, is read whole; an upload the
// client abandons, whether it was being read or still waiting, gives its turn back.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodySlots } from '../../src/api/body-slots.js';
import { auth, startServer, type TestServer } from './helpers.js';

let s: TestServer;
let port: number;
beforeAll(async () => {
  s = await startServer({ logging: false, bigBodySlots: 2 });
  port = Number(new URL(await s.app.listen({ host: '127.0.0.1', port: 0 })).port);
});
afterAll(async () => {
  s?.app.server.closeAllConnections(); // a failed test may leave a request unread
  await s?.close();
});

/** Request i: a short state of its own and two questions; `padding` spaces of JSON whitespace make it big. */
function body(i: number, padding = 0): string {
  const questions = {
    [`late-${i}`]: { type: 'noul', instructions: `Was parcel ${i} late?` },
    topic: { type: 'choice', instructions: 'What is it about?', criteria: { delivery: null, billing: null } },
  };
  const state = `Parcel ${i} (café crème, 🙂) arrived ${i} days late; the invoice was paid.`;
  return `{"model": "svc-latest", "state": ${JSON.stringify(state)},${' '.repeat(padding)}"questions": ${JSON.stringify(questions)}}`;
}

async function post(text: string): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/systemone`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: text,
    signal: AbortSignal.timeout(30_000), // a slot never given back would hold the body unread
  });
  return { status: res.status, json: await res.json() };
}

/** A raw HTTP exchange: the head, then the body in pieces of `piece` bytes, one per turn of the loop. */
function rawPost(
  bytes: Buffer,
  o: { piece: number; chunked?: boolean; stopAfter?: number },
): { socket: Socket; response: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (text += d));
  const response = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(text));
    socket.on('error', () => {});
  });
  socket.on('connect', async () => {
    const framing = o.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes.length}`;
    socket.write(
      `POST /v1/systemone HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth().authorization}\r\nContent-Type: application/json\r\n${framing}\r\nConnection: close\r\n\r\n`,
    );
    for (let at = 0; at < bytes.length; at += o.piece) {
      if (o.stopAfter !== undefined && at >= o.stopAfter) return void socket.destroy();
      const piece = bytes.subarray(at, at + o.piece);
      socket.write(
        o.chunked
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece,
      );
      await new Promise((r) => setImmediate(r));
    }
    if (o.chunked) socket.write('0\r\n\r\n');
  });
  return { socket, response };
}

/** The status and JSON body of a raw HTTP/1.1 response (Content-Length framed: Fastify's). */
function parsed(response: string): { status: number; json: unknown } {
  const [head, ...rest] = response.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(head!)?.[1]), json: JSON.parse(rest.join('\r\n\r\n')) };
}

describe('big bodies', () => {
  it('8 concurrent 2 MB bodies (2 at a time in the worker) each get the answer of the same request sent small', async () => {
    const small = await Promise.all(Array.from({ length: 8 }, (_, i) => post(body(i))));
    const big = await Promise.all(Array.from({ length: 8 }, (_, i) => post(body(i, 2 * 2 ** 20))));
    for (let i = 0; i < 8; i++) {
      expect(small[i]!.status).toBe(200);
      expect(big[i]).toEqual(small[i]);
      expect(Object.keys((big[i]!.json as { answers: object }).answers)).toEqual([`late-${i}`, 'topic']);
    }
  });

  it('a big body in many small TCP writes, multi-byte characters cut between them, is read whole', async () => {
    const bytes = Buffer.from(body(1, 200_000));
    const expected = await post(body(1));
    const { response } = rawPost(bytes, { piece: 997 });
    expect(parsed(await response)).toEqual(expected);
  });

  it('a chunked body with no Content-Length that grows past the inline size is read whole', async () => {
    const bytes = Buffer.from(body(2, 300_000));
    const expected = await post(body(2));
    const { response } = rawPost(bytes, { piece: 4093, chunked: true });
    expect(parsed(await response)).toEqual(expected);
  });

  it('abandoned uploads give their turn back: the next big body still gets through', async () => {
    const bytes = Buffer.from(body(3, 2 * 2 ** 20));
    // Four uploads that stop half way: two take the slots, two wait for them; all four are abandoned.
    const abandoned = Array.from({ length: 4 }, () => rawPost(bytes, { piece: 64 * 1024, stopAfter: 2 ** 20 }));
    await Promise.all(abandoned.map((a) => a.response));
    const expected = await post(body(3));
    const next = await Promise.all([
      post(body(3, 2 * 2 ** 20)),
      post(body(3, 2 * 2 ** 20)),
      post(body(3, 2 * 2 ** 20)),
    ]);
    for (const r of next) expect(r).toEqual(expected);
  });

  it('a big invalid body whose 422 echoes it (written in the worker) gets the bytes the inline parse would send', async () => {
    const inline = await startServer({
      logging: false,
      inlineBodyBytes: Number.MAX_SAFE_INTEGER,
      evaluator: s.evaluator,
    });
    try {
      const inlinePort = Number(new URL(await inline.app.listen({ host: '127.0.0.1', port: 0 })).port);
      const state = `quotes " and \\ backslashes, \u2028, \ud800 (alone), é, 🙂 ${'long text '.repeat(100_000)}`;
      // No questions: the 422's entry echoes the whole body as its input (about 1 MB).
      const text = `{"model": "svc-latest", "state": ${JSON.stringify(state)}}`;
      const raw = async (p: number) => {
        const res = await fetch(`http://127.0.0.1:${p}/v1/systemone`, {
          method: 'POST',
          headers: { ...auth(), 'content-type': 'application/json' },
          body: text,
        });
        return {
          status: res.status,
          type: res.headers.get('content-type'),
          bytes: Buffer.from(await res.arrayBuffer()),
        };
      };
      const [big, small] = [await raw(port), await raw(inlinePort)];
      expect(small.status).toBe(422);
      expect(small.bytes.length).toBeGreaterThan(1_000_000);
      expect(big.status).toBe(422);
      expect(big.type).toBe(small.type);
      expect(big.bytes.equals(small.bytes)).toBe(true);
    } finally {
      await inline.app.close();
    }
  });

  it('a big body with invalid content gets the same 422 as the small one', async () => {
    const broken = (padding: number) =>
      `{"model": "svc-latest", "state": "x",${' '.repeat(padding)}"questions": {"q": {"type": "maybe"}}}`;
    const small = await post(broken(0));
    expect(small.status).toBe(422);
    expect(await post(broken(1_000_000))).toEqual(small);
  });
});

describe('BodySlots', () => {
  it('hands out slots first come, first served; a withdrawn wait is skipped; a release counts once', () => {
    const slots = new BodySlots(1);
    const order: string[] = [];
    let releaseA = (): void => {};
    slots.take((r) => ((releaseA = r), order.push('a')));
    let releaseB = (): void => {};
    slots.take((r) => ((releaseB = r), order.push('b')));
    const withdrawC = slots.take(() => order.push('c'));
    slots.take(() => order.push('d'));
    expect([order, slots.busy, slots.queued]).toEqual([['a'], 1, 3]);
    withdrawC();
    releaseA();
    releaseA(); // once only: it must not grant a second slot
    expect([order, slots.busy, slots.queued]).toEqual([['a', 'b'], 1, 1]);
    releaseB();
    expect([order, slots.queued]).toEqual([['a', 'b', 'd'], 0]);
  });
});

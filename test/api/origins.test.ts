// Host and Origin checks as an attacker would try them: a DNS-rebinding Host on every route (the
// server's own route table, so a new route is covered), empty and missing Hosts over a raw socket,
// odd ports and IPv6 forms, cross-origin requests and preflights with and without the CORS
// allowlist. Every refusal is a JSON 403 carrying the request id. The real engine, real sockets.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostAllowed, hostPolicy, originAllowed } from '../../src/common/index.js';
import { loadServeSettings } from '../../src/config/index.js';
import { auth, startListening, tinyEvaluator, type TestServer } from './helpers.js';
import type { Evaluator } from '../../src/engine/index.js';

type Listening = TestServer & { base: string };

/** One raw HTTP/1.x request over a socket (headers exactly as written: none added, none dropped). */
function raw(base: string, text: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect(Number(port), hostname, () => socket.write(text));
    socket.on('data', (c) => (data += c));
    socket.on('error', reject);
    socket.on('close', () =>
      resolve({ status: Number(data.split(' ')[1]), body: data.slice(data.indexOf('\r\n\r\n') + 4) }),
    );
  });
}

/** Every path of the server's route table (printRoutes' tree, segments joined by depth), parameters filled in. */
function routes(s: Listening): string[] {
  const stack: string[] = [];
  const paths: string[] = [];
  for (const line of s.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+) \(/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    paths.push(
      stack
        .join('')
        .replace(/:[^/]+/g, 'x')
        .replace(/\*/g, 'x'),
    );
  }
  return [...new Set(paths)];
}

describe('the Host check (DNS rebinding)', () => {
  let evaluator: Evaluator;
  let s: Listening;
  beforeAll(async () => {
    evaluator = await tinyEvaluator();
    s = await startListening({ evaluator });
  }, 120_000);
  afterAll(async () => {
    await s.close();
    await evaluator.close();
  });

  it('refuses a rebinding Host on every route and method with a JSON 403, even with a valid key and its Origin', async () => {
    const paths = routes(s);
    // The route table as a user reaches it: the API, the MCP endpoint, the pages, ops.
    for (const p of [
      '/v1/systemone',
      '/v1/models',
      '/mcp',
      '/healthz',
      '/metrics',
      '/playground',
      '/docs',
      '/openapi.json',
    ])
      expect(paths.some((r) => r === p || r.startsWith(`${p}/`))).toBe(true);
    for (const path of [...paths, '/no/such/path']) {
      for (const method of ['GET', 'POST', 'DELETE', 'OPTIONS'] as const) {
        const res = await s.app.inject({
          method,
          url: path,
          headers: { host: 'attacker.example:8080', ...auth(), origin: 'http://attacker.example:8080' },
          payload: method === 'POST' ? '{}' : undefined,
        });
        expect([method, path, res.statusCode]).toEqual([method, path, 403]);
        expect(res.json().detail).toMatch(/^Host "attacker\.example:8080" is not allowed/);
        expect(res.headers['x-request-id']).toMatch(/^req_/);
      }
    }
  });

  it('refuses a missing or empty Host (raw socket, HTTP/1.0 and 1.1) and answers loopback forms', async () => {
    const port = new URL(s.base).port;
    for (const head of [
      'GET /healthz HTTP/1.1\r\nConnection: close\r\n',
      'GET /healthz HTTP/1.1\r\nHost: \r\nConnection: close\r\n',
      'GET /healthz HTTP/1.0\r\n',
      'POST /v1/systemone HTTP/1.1\r\nAuthorization: Bearer test-key-1\r\nContent-Length: 2\r\nConnection: close\r\n',
    ]) {
      const res = await raw(s.base, `${head}\r\n${head.startsWith('POST') ? '{}' : ''}`);
      expect(res.status).toBe(403);
      expect(JSON.parse(res.body).detail).toMatch(/^Host \(none\) is not allowed/);
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'localhost',
      `LOCALHOST:${port}`,
      'localhost.',
      'app.localhost:3000',
      '[::ffff:127.0.0.1]',
      '10.1.2.3',
    ]) {
      const res = await raw(s.base, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect([host, res.status]).toEqual([host, 200]);
    }
  });

  it('refuses odd forms: bad ports, userinfo, shorthand and hex IPv4, look-alike names, broken IPv6', async () => {
    for (const host of [
      'localhost:0',
      'localhost:99999',
      'localhost:80x',
      'localhost:',
      'user@localhost',
      'localhost.attacker.example',
      '127.0.0.1.attacker.example',
      'attacker.example',
      '127.1',
      '0x7f000001',
      '[::1',
      '[not:an:ip]:80',
      'local host',
    ]) {
      const res = await raw(s.base, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect([host, res.status]).toEqual([host, 403]);
    }
  });
});

describe('the Host allowlist', () => {
  it('on a loopback bind: the defaults, plus --allowed-hosts names (exact or *.suffix); * turns it off', () => {
    const names = ['assay.example.com', '*.corp.example'];
    expect(hostPolicy('127.0.0.1', undefined)).toEqual([]);
    expect(hostPolicy('::1', undefined)).toEqual([]);
    expect(hostPolicy('localhost', undefined)).toEqual([]);
    expect(hostPolicy('0.0.0.0', undefined)).toBe('any');
    expect(hostPolicy('0.0.0.0', names)).toEqual(names);
    expect(hostPolicy('127.0.0.1', ['*'])).toBe('any');
    const policy = hostPolicy('0.0.0.0', names);
    for (const [host, ok] of [
      ['assay.example.com', true],
      ['ASSAY.example.com:443', true],
      ['a.corp.example', true],
      ['a.b.corp.example:8080', true],
      ['corp.example', false],
      ['xcorp.example', false],
      ['assay.example.com.attacker.example', false],
      ['localhost:8080', true],
      ['attacker.example', false],
      ['', false],
      [undefined, false],
    ] as const) {
      expect([host, hostAllowed(host, policy)]).toEqual([host, ok]);
    }
    expect(hostAllowed('attacker.example', 'any')).toBe(true);
  });

  it('the settings check each entry and name the bad one', () => {
    const env = {};
    expect(() => loadServeSettings(['--allowed-hosts', 'good.example,bad host'], env)).toThrow(
      "--allowed-hosts expected host names (name, *.suffix, IP literal, or *), got 'bad host'",
    );
    expect(() => loadServeSettings(['--cors-origins', 'https://app.example/path'], env)).toThrow(
      "--cors-origins expected origins as scheme://host[:port], or *, got 'https://app.example/path'",
    );
    expect(() => loadServeSettings([], { ASSAY_CORS_ORIGINS: 'ftp://x.example' })).toThrow(
      /ASSAY_CORS_ORIGINS expected/,
    );
    const s = loadServeSettings(['--cors-origins', 'HTTPS://App.Example:443/, http://localhost:3000'], env);
    expect(s !== 'help' && s.corsOrigins).toEqual(['https://app.example', 'http://localhost:3000']);
  });
});

describe('the Origin check and CORS', () => {
  let evaluator: Evaluator;
  let plain: Listening;
  let listed: Listening;
  let any: Listening;
  const APP = 'http://app.example:3000';
  beforeAll(async () => {
    evaluator = await tinyEvaluator();
    plain = await startListening({ evaluator });
    listed = await startListening({ evaluator, corsOrigins: [APP] });
    any = await startListening({ evaluator, corsOrigins: ['*'] });
  }, 120_000);
  afterAll(async () => {
    for (const s of [plain, listed, any]) await s.close();
    await evaluator.close();
  });

  const preflight = (s: Listening, origin: string) =>
    fetch(`${s.base}/v1/systemone`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });

  it('by default: same-origin requests pass, cross-origin ones and their preflights get 403, no CORS header ever', async () => {
    const own = new URL(plain.base).origin;
    const same = await fetch(`${plain.base}/v1/models`, { headers: { ...auth(), origin: own } });
    expect(same.status).toBe(200);
    expect(same.headers.get('access-control-allow-origin')).toBeNull();
    for (const origin of ['http://attacker.example', APP, 'null', `${own}.attacker.example`, 'http://localhost:1']) {
      const res = await fetch(`${plain.base}/v1/models`, { headers: { ...auth(), origin } });
      expect([origin, res.status]).toEqual([origin, 403]);
      expect((await res.json()).detail).toMatch(/^Origin ".*" is not allowed/);
      const pre = await preflight(plain, origin);
      expect(pre.status).toBe(403);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('with --cors-origins: a listed origin gets its preflight and its answers readable, never with credentials', async () => {
    const pre = await preflight(listed, APP);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(APP);
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(pre.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    const res = await fetch(`${listed.base}/v1/models`, { headers: { ...auth(), origin: APP } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-expose-headers')).toMatch(/x-request-id/);
    // Another origin is still refused, preflight and request.
    expect((await preflight(listed, 'http://attacker.example')).status).toBe(403);
    expect(
      (await fetch(`${listed.base}/v1/models`, { headers: { ...auth(), origin: 'http://app.example:3001' } })).status,
    ).toBe(403);
  });

  it('with --cors-origins "*": any origin, answered "*" and never with credentials; the Host check still holds', async () => {
    const pre = await preflight(any, 'http://anything.example');
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    const rebinding = await any.app.inject({
      method: 'GET',
      url: '/v1/models',
      headers: { host: 'attacker.example', origin: 'http://attacker.example' },
    });
    expect(rebinding.statusCode).toBe(403);
  });

  it('the pure rule: an Origin naming the Host (default ports alike) is the same origin', () => {
    expect(originAllowed(undefined, 'x.example', [])).toBe(true);
    expect(originAllowed('https://assay.example.com', 'assay.example.com', [])).toBe(true);
    expect(originAllowed('https://assay.example.com', 'assay.example.com:443', [])).toBe(true);
    expect(originAllowed('http://assay.example.com', 'assay.example.com:8080', [])).toBe(false);
    expect(originAllowed('http://[::1]:8080', '[::1]:8080', [])).toBe(true);
    expect(originAllowed('http://a.example/', 'b.example', ['http://a.example'])).toBe(true);
    expect(originAllowed('null', 'b.example', [])).toBe(false);
  });
});

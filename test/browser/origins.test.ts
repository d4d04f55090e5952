// A browser as the attacker, in a real Chromium: a page of another origin tries to read the API
// (blocked by default, allowed once its origin is listed in --cors-origins), and a DNS-rebinding
// page (a hostile name resolved to 127.0.0.1 by Chromium's own resolver rules) is served by the
// attacker and then calls the server as its own origin: every such request is refused with 403.
// The playground keeps working on the server's own origin. Screenshots in .test-output/browser/.
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { keysFromList } from '../../src/api/auth.js';
import { staticModels } from '../../src/service/provider.js';
import type { Evaluator } from '../../src/engine/index.js';
import { testRegistry, tinyEvaluator } from '../api/helpers.js';

const KEY = 'browser-origin-key';
const SHOTS = resolve('.test-output/browser');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', process.env.CHROMIUM_PATH].find(
  (p) => p && existsSync(p),
);
const ATTACKER = 'attacker.example';

/** The browser app's page: a button-free page whose script the test runs. */
const APP_PAGE =
  '<!doctype html><title>a browser app</title><h1>A browser app on another origin</h1><pre id="out"></pre>';

describe.skipIf(!CHROMIUM)('origins in a real browser', () => {
  let evaluator: Evaluator;
  let closed: AssayServer;
  let open: AssayServer;
  let closedBase: string;
  let openBase: string;
  let pages: Server;
  let appOrigin: string;
  let browser: Browser;

  async function assay(corsOrigins: string[]): Promise<[AssayServer, string]> {
    const dir = evaluator.modelDir;
    const app = await buildServer({
      registry: testRegistry(dir),
      models: staticModels({ 'svc-1.13.0': evaluator, 'svc-0.9.0': evaluator }),
      keys: keysFromList(KEY),
      logging: false,
      corsOrigins,
    });
    return [app, await app.listen({ host: '127.0.0.1', port: 0 })];
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    evaluator = await tinyEvaluator();
    // The other origin: a plain page server on another port of the same machine.
    pages = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(APP_PAGE));
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    appOrigin = `http://127.0.0.1:${(pages.address() as { port: number }).port}`;
    [closed, closedBase] = await assay([]);
    [open, openBase] = await assay([appOrigin]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // The rebinding: the attacker's name resolves to this machine, as a rebinding DNS server makes
      // it. Chromium's own Local Network Access checks would stop a public page's calls to this
      // machine first: they are off, standing for the browsers without them (Firefox, Safari, older
      // Chromium), so every request reaches the server and the server's own check is what is tested.
      args: [
        '--no-sandbox',
        `--host-resolver-rules=MAP ${ATTACKER} 127.0.0.1`,
        '--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await closed?.close();
    await open?.close();
    pages?.close();
    await evaluator?.close();
  });

  /** Runs fetch in the page: the status and body it could read, or the error the browser gave. */
  async function tryFetch(
    page: Page,
    url: string,
    init: RequestInit = {},
  ): Promise<{ status?: number; body?: string; error?: string }> {
    return page.evaluate(
      async ([u, i]) => {
        try {
          const res = await fetch(u, i);
          return { status: res.status, body: await res.text() };
        } catch (e) {
          return { error: String(e) };
        }
      },
      [url, init] as const,
    );
  }

  /** OPTIONS requests a server answered with `status`, from its /metrics. */
  async function preflights(app: AssayServer, status: string): Promise<number> {
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const lines = text
      .split('\n')
      .filter((l) => l.startsWith('assay_http_requests_total{') && l.includes('method="OPTIONS"'));
    return lines.filter((l) => l.includes(`status="${status}"`)).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  }

  const request = {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'svc-latest',
      state: 'hello',
      questions: { q: { type: 'noul', instructions: 'A greeting?' } },
    }),
  };

  it('a page of another origin cannot read the API by default; once its origin is listed, it can', async () => {
    const page = await browser.newPage();
    await page.goto(appOrigin);
    for (const url of [`${closedBase}/v1/systemone`, `${closedBase}/v1/models`]) {
      const r = await tryFetch(page, url, url.endsWith('systemone') ? request : { headers: request.headers });
      expect(r.error).toMatch(/Failed to fetch/);
    }
    // Even a request with no preflight (no custom header) cannot be read: no CORS header on the 403.
    expect((await tryFetch(page, `${closedBase}/healthz`)).error).toMatch(/Failed to fetch/);

    const models = await tryFetch(page, `${openBase}/v1/models`, { headers: request.headers });
    expect(models.status).toBe(200);
    expect(JSON.parse(models.body!).models[0].name).toBe('svc-latest');
    const answer = await tryFetch(page, `${openBase}/v1/systemone`, request);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body!).answers.q.type).toBe('noul');
    // The browser's preflights reached both servers: refused by one (403), answered by the other (204).
    expect(await preflights(closed, '403')).toBeGreaterThan(0);
    expect(await preflights(open, '204')).toBeGreaterThan(0);
    await page.evaluate((t) => (document.getElementById('out')!.textContent = t), answer.body!);
    await page.screenshot({ path: `${SHOTS}/origins-listed-app.png` });
    await page.close();
  });

  it('a DNS-rebinding page is refused on every call, though the browser thinks it is same-origin', async () => {
    const port = new URL(closedBase).port;
    const rebound = `http://${ATTACKER}:${port}`;
    const page = await browser.newPage();
    // Navigating there: the browser sends Host: attacker.example:<port>; the server refuses it.
    const nav = await page.goto(`${rebound}/playground`);
    expect(nav!.status()).toBe(403);
    expect(await page.textContent('body')).toMatch(/Host .*attacker\.example.* is not allowed/);
    await page.screenshot({ path: `${SHOTS}/origins-rebinding-refused.png` });
    // The attacker's page itself (served by the attacker before the rebinding), then its same-origin calls.
    await page.route(`${rebound}/`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: APP_PAGE }),
    );
    await page.goto(`${rebound}/`);
    for (const path of ['/v1/models', '/metrics', '/playground/models', '/docs', '/openapi.json', '/healthz']) {
      const r = await tryFetch(page, path, { headers: request.headers });
      expect([path, r.status, r.error]).toEqual([path, 403, undefined]);
    }
    const guessed = await tryFetch(page, '/v1/systemone', request);
    expect(guessed.status).toBe(403);
    await page.close();
  });

  it("the playground still works on the server's own origin, with the checks on", async () => {
    const page = await browser.newPage();
    const nav = await page.goto(`${closedBase}/playground`);
    expect(nav!.status()).toBe(200);
    const same = await tryFetch(page, '/v1/systemone', request);
    expect(same.status).toBe(200);
    await page.close();
  });
});

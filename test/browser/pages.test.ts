// The browser pages in a real Chromium (Debian's, driven by playwright-core; no browser download):
// the real server on the tiny model (synthetic, as `npm start` serves it), over a real socket.
// /playground: a key, the synthetic banner, the README's example request (a question of each type)
// sent with the Send button; the drawn answers equal the API's JSON for the same request, and the
// call carried the SDK's state hash. A 422 is shown at its question. /docs: Authorize, Try it out,
// Execute. report.html of `assay eval --dataset --compare` opens offline with its diagrams and flips.
// Screenshots land in .test-output/browser/ (look at them).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { REQUEST_EXAMPLE } from '../../src/api/openapi-examples.js';
import { keysFromList } from '../../src/api/auth.js';
import { run as evalCmd } from '../../src/commands/eval.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { staticModels } from '../../src/service/provider.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';

const KEY = 'browser-test-key';
const SHOTS = resolve('.test-output/browser');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', process.env.CHROMIUM_PATH].find(
  (p) => p && existsSync(p),
);
if (!CHROMIUM)
  console.warn(
    '\n  !! chromium is not installed: the browser tests are SKIPPED (apt-get install chromium; .ci/run installs it)\n',
  );

// The README's example request (the OpenAPI document's example): what the playground starts with.
const example = REQUEST_EXAMPLE;

describe.skipIf(!CHROMIUM)('the browser pages', () => {
  let app: AssayServer;
  let base: string;
  let browser: Browser;
  let evaluator: Evaluator;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    // The prefix cache off: the page's answers and the direct call's are the same passes, bit for bit.
    evaluator = await loadEvaluator({ modelDir: dir, variant: 'fp32', threads: 1, prefixCacheBytes: 0 });
    const registry = checkRegistry(
      {
        default: 'svc-1.13.0',
        models: {
          'svc-1.13.0': {
            path: dir,
            synthetic: { shape: 'tiny', dtype: 'fp32' },
            description: 'Synthetic tiny decoder',
            release_date: '2026-11-22',
          },
        },
        aliases: { 'svc-latest': 'svc-1.13.0' },
      },
      '(browser test registry)',
    );
    app = await buildServer({
      registry,
      models: staticModels({ 'svc-1.13.0': evaluator }),
      keys: keysFromList(KEY),
      logging: false,
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await evaluator?.close();
  });

  async function direct(body: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  /** A page that fails the test on a console error (a CSP violation included) or an uncaught exception. */
  async function open(url: string, width = 1280): Promise<{ page: Page; problems: string[]; requests: Request[] }> {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const problems: string[] = [];
    const requests: Request[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('request', (r) => requests.push(r));
    await page.goto(url);
    return { page, problems, requests };
  }

  it('/playground: the README example, sent with Send, is drawn as the API answers it, with the state hash', async () => {
    const { page, problems, requests } = await open(`${base}/playground`);
    await expect.poll(() => page.locator('#synthetic-banner').isVisible(), { timeout: 30_000 }).toBe(false);
    await page.fill('#key', KEY);
    await page.press('#key', 'Tab'); // change: the key is stored for the tab and the models are loaded
    await page.locator('#synthetic-banner').waitFor({ state: 'visible' });
    expect(await page.locator('#model').inputValue()).toBe('svc-latest');
    await page.click('#send');
    await page.locator('.answer[data-question="severity"]').waitFor();

    const api = await direct(example);
    expect(api.status).toBe(200);
    const refund = page.locator('.answer[data-question="refund"]');
    expect(Number(await refund.getAttribute('data-noul'))).toBe(api.json.answers.refund.noul);
    expect(await refund.locator('.headline').textContent()).toBe(`P(yes) = ${api.json.answers.refund.noul.toFixed(3)}`);
    for (const id of ['topic', 'severity']) {
      const a = api.json.answers[id];
      const rows = page.locator(`.answer[data-question="${id}"] .bar-row`);
      const drawn = await rows.evaluateAll((els) =>
        els.map((e) => [
          e.getAttribute('data-label'),
          Number(e.getAttribute('data-p')),
          e.querySelector('.bar-value')!.textContent,
          e.classList.contains('picked'),
        ]),
      );
      const keys = Object.keys(a.probabilities);
      expect(drawn.map((d) => Number(d[1]))).toEqual(keys.map((k) => a.probabilities[k]));
      expect(drawn.map((d) => d[2])).toEqual(keys.map((k) => `${(a.probabilities[k] * 100).toFixed(1)}%`));
      const conf = page.locator(`.answer[data-question="${id}"] .confidence`);
      expect(Number(await conf.getAttribute('data-confidence'))).toBe(a.confidence);
      // Which formula the number comes from (the server's --confidence; this one runs the default).
      expect(await conf.textContent()).toBe(`confidence ${(a.confidence * 100).toFixed(1)}% (entropy)`);
      if (id === 'topic') expect(drawn.filter((d) => d[3]).map((d) => d[0])).toEqual([a.choice]);
    }
    expect(Number(await page.locator('.answer[data-question="severity"]').getAttribute('data-score'))).toBe(
      api.json.answers.severity.score,
    );
    expect(await page.locator('[data-input-tokens]').textContent()).toBe(String(api.json.usage.input_tokens));

    const sent = requests.find((r) => r.url().endsWith('/v1/systemone'))!;
    expect(JSON.parse(sent.postData()!)).toEqual(example);
    expect(sent.headers()['x-assay-state-hash']).toBe(
      createHash('sha256').update(JSON.stringify(example.state)).digest('hex'),
    );
    // The key lives in this tab's sessionStorage only.
    expect(await page.evaluate(() => [sessionStorage.getItem('assay-playground-key'), localStorage.length])).toEqual([
      KEY,
      0,
    ]);
    await page.screenshot({ path: join(SHOTS, 'playground.png'), fullPage: true });

    // Copy as curl: the same request, the key left to the environment.
    await page.click('#copy-curl');
    const curl = await page.locator('#snippet').inputValue();
    expect(curl).toContain(`${base}/v1/systemone`);
    expect(curl).toContain('$ASSAY_API_KEY');
    expect(curl).not.toContain(KEY);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('/playground: a 422 is shown at the question it concerns; readable and usable at 320 px, by keyboard', async () => {
    const { page, problems } = await open(`${base}/playground`, 320);
    await page.fill('#key', KEY);
    // A score question with one level: the API's 422 names questions.<id>; the page shows it on that card.
    await page.click('[data-add="score"]');
    const card = page.locator('.question').last();
    await card.locator('.question-id').fill('scale');
    await card.locator('.instructions').fill('How much?');
    for (let i = 0; i < 2; i++) await card.locator('.row button').last().click();
    await page.locator('#state').focus();
    await page.keyboard.press('Control+Enter');
    await card.locator('.field-error').waitFor({ state: 'visible' });
    const api = await direct({
      ...example,
      questions: { ...example.questions, scale: { type: 'score', instructions: 'How much?', criteria: [''] } },
    });
    expect(api.status).toBe(422);
    expect(api.json.detail[0].loc.slice(0, 3)).toEqual(['body', 'questions', 'scale']);
    expect(await card.locator('.field-error').textContent()).toContain(api.json.detail[0].msg);
    expect(await page.locator('.question').first().locator('.field-error').isVisible()).toBe(false);
    // Chromium logs every non-2xx answer as a console error: this one is the test's point.
    problems.splice(0, problems.length, ...problems.filter((p) => !p.includes('status of 422')));
    // Nothing overflows sideways at 320 px.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(320);
    await page.screenshot({ path: join(SHOTS, 'playground-320-error.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('/docs: Authorize with the key, Try it out, Execute the pre-filled example: 200, with the state hash', async () => {
    const { page, problems, requests } = await open(`${base}/docs`);
    await page.locator('.opblock-post').first().waitFor();
    await page.click('.btn.authorize');
    await page.fill('.modal-ux input', KEY);
    await page.click('.modal-ux .auth-btn-wrapper .authorize');
    await page.click('.modal-ux .btn-done');
    await page.click('.opblock-post .opblock-summary');
    // "Try it out" as the docs say: it starts off, one press turns it on. The body is not touched.
    const tryItOut = page.locator('.opblock-post .try-out__btn');
    expect((await tryItOut.textContent())?.trim()).toBe('Try it out');
    await tryItOut.click();
    const body = page.locator('.opblock-post textarea.body-param__text');
    await body.waitFor();
    expect(JSON.parse(await body.inputValue())).toEqual(example); // the README's request, pre-filled
    await page.click('.opblock-post .execute');
    const status = page.locator('.opblock-post .live-responses-table tbody .response-col_status').first();
    await status.waitFor();
    expect((await status.textContent())?.trim()).toBe('200');
    const sent = requests.find((r) => r.url().endsWith('/v1/systemone'))!;
    expect(sent.headers().authorization).toBe(`Bearer ${KEY}`);
    expect(sent.headers()['x-assay-state-hash']).toBe(
      createHash('sha256').update(JSON.stringify(example.state)).digest('hex'),
    );
    await page.screenshot({ path: join(SHOTS, 'docs.png'), fullPage: false });
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/docs looks like Assay's: no Fastify top bar or logo, its title and version, every route with a working Try it out", async () => {
    const { page, problems } = await open(`${base}/docs`);
    await page.locator('.opblock').first().waitFor();
    expect(await page.locator('.topbar').count()).toBe(0);
    expect(await page.locator('img[alt*="Fastify" i], a[href*="fastify" i]').count()).toBe(0);
    expect(await page.title()).toBe('Assay API reference');
    const info = (await page.locator('.info .title').textContent()) ?? '';
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
    expect(info).toContain('Assay question-evaluation API');
    expect(info).toContain(version);
    await page.screenshot({ path: join(SHOTS, 'docs-top.png'), fullPage: false });
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, object> };
    const operations = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    const blocks = page.locator('.opblock');
    expect(await blocks.count()).toBe(operations);
    await page.click('.btn.authorize');
    await page.fill('.modal-ux input', KEY);
    await page.click('.modal-ux .auth-btn-wrapper .authorize');
    await page.click('.modal-ux .btn-done');
    // Each route: open it, Try it out, and its form is there (a body or parameters, or none needed).
    for (let i = 0; i < operations; i++) {
      const block = blocks.nth(i);
      await block.locator('.opblock-summary').first().click();
      const button = block.locator('.try-out__btn');
      await button.waitFor();
      await button.click();
      await block.locator('.execute').waitFor();
    }
    // GET routes without parameters execute and answer 200 from the page.
    for (const path of ['/v1/models', '/livez', '/readyz', '/startupz', '/healthz', '/metrics']) {
      const block = page.locator(`.opblock-get:has(.opblock-summary-path[data-path="${path}"])`);
      await block.locator('.execute').click();
      const status = block.locator('.live-responses-table tbody .response-col_status').first();
      await status.waitFor();
      expect((await status.textContent())?.trim(), path).toBe('200');
    }
    await page.screenshot({ path: join(SHOTS, 'docs-routes.png'), fullPage: false });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('report.html of eval --dataset --compare opens offline, with its tables, diagrams and flipped answers', async () => {
    const out = mkdtempSync(join(tmpdir(), 'assay-report-html-'));
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    const code = await evalCmd(
      ['--dataset', 'examples/support-tickets.jsonl', '--compare', 'int8,fp32', '--out', out],
      { stdout: sink, stderr: sink, env: {} },
    );
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    const { page, problems, requests } = await open(`file://${join(out, 'report.html')}`);
    expect(await page.locator('.synthetic').isVisible()).toBe(true);
    // Two arms × (noul, choice) reliability diagrams and × (noul, choice, score) risk–coverage curves, drawn inline.
    expect(await page.locator('figure:not([aria-label^="risk"]) svg').count()).toBe(4);
    expect(await page.locator('figure[aria-label^="risk"] svg').count()).toBe(6);
    expect(await page.locator('figure svg circle').count()).toBeGreaterThan(0);
    const flipped = Object.values(report.flips as Record<string, { flipped: number }>).reduce(
      (n, c) => n + c.flipped,
      0,
    );
    expect(await page.locator('table.changed tbody tr').count()).toBe(flipped);
    expect(requests.map((r) => r.url()).filter((u) => !u.startsWith('file://'))).toEqual([]); // self-contained
    await page.screenshot({ path: join(SHOTS, 'report.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});

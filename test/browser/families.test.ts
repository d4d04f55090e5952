// The playground in a real Chromium (Debian's, driven by playwright-core) against a server whose
// models are encoder-family folders (the Laya replica, the NLI replica), over a real socket: the
// model picked in the page, the README's example request sent with Send, the drawn answers equal to
// the API's JSON for the same request. Screenshots land in .test-output/browser/ (look at them).
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { REQUEST_EXAMPLE } from '../../src/api/openapi-examples.js';
import { keysFromList } from '../../src/api/auth.js';
import { checkRegistry } from '../../src/registry.js';
import { staticModels } from '../../src/service/provider.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { ensureLayaReplica } from '../../tools/families/laya-replica.js';
import { ensureNliReplica } from '../../tools/families/nli-replica.js';

const KEY = 'browser-family-key';
const SHOTS = resolve('.test-output/browser');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', process.env.CHROMIUM_PATH].find(
  (p) => p && existsSync(p),
);

const FOLDERS: Record<string, () => string> = {
  'laya-1': () => ensureLayaReplica(),
  'nli-1': () => ensureNliReplica('deberta'),
};

describe.skipIf(!CHROMIUM)('the playground on encoder-family models', () => {
  let app: AssayServer;
  let base: string;
  let browser: Browser;
  const evaluators: Record<string, Evaluator> = {};

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const models: Record<string, object> = {};
    for (const [id, folder] of Object.entries(FOLDERS)) {
      evaluators[id] = await loadEvaluator({ modelDir: folder(), threads: 1 });
      models[id] = { path: folder(), description: `${id} replica`, release_date: '2026-11-27', listed: true };
    }
    const registry = checkRegistry({ default: 'laya-1', models, aliases: {} }, '(browser family registry)');
    app = await buildServer({ registry, models: staticModels(evaluators), keys: keysFromList(KEY), logging: false });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    for (const e of Object.values(evaluators)) await e.close();
  });

  it.each(Object.keys(FOLDERS))(
    '%s: the README example, sent with Send, is drawn as the API answers it',
    async (model) => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const problems: string[] = [];
      page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${base}/playground`);
      await page.fill('#key', KEY);
      await page.press('#key', 'Tab'); // the models are loaded for the key
      await expect.poll(() => page.locator(`#model option[value="${model}"]`).count(), { timeout: 30_000 }).toBe(1);
      await page.selectOption('#model', model);
      await page.click('#send');
      await page.locator('.answer[data-question="severity"]').waitFor();

      const res = await fetch(`${base}/v1/systemone`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...REQUEST_EXAMPLE, model }),
      });
      expect(res.status).toBe(200);
      const api = (await res.json()) as { answers: Record<string, any>; usage: { input_tokens: number } };
      const refund = page.locator('.answer[data-question="refund"]');
      expect(Number(await refund.getAttribute('data-noul'))).toBe(api.answers.refund.noul);
      for (const id of ['topic', 'severity']) {
        const a = api.answers[id];
        const drawn = await page
          .locator(`.answer[data-question="${id}"] .bar-row`)
          .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-p'))));
        expect(drawn).toEqual(Object.keys(a.probabilities).map((k) => a.probabilities[k]));
      }
      expect(await page.locator('[data-input-tokens]').textContent()).toBe(String(api.usage.input_tokens));
      await page.screenshot({ path: join(SHOTS, `playground-${model}.png`), fullPage: true });
      expect(problems).toEqual([]);
      await page.close();
    },
  );
});

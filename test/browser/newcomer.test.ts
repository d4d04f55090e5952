// The playground as a newcomer meets it, in a real Chromium (Debian's, driven by playwright-core):
// a window the whole page fits in, a real mouse press on Send (down, a human's pause, up), a pasted
// key, an error first. The first Send after an error is sent; errors are said once, where they are
// seen, and the previous answers go; an empty key and a state with a JSON typo are said as such;
// tiny-tasks-1 is listed and its held-out ticket is one click away, answered right.
// The real server over a real socket: the synthetic tiny model and the trained tiny-tasks-1.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { keysFromList, sha256 } from '../../src/api/auth.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { staticModels } from '../../src/service/provider.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';

const KEY = 'newcomer-test-key';
/** A key allowed two requests a minute (the model list takes one, like any call): its third is a 429. */
const LIMITED = 'newcomer-limited-key';
const SHOTS = resolve('.test-output/browser');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', process.env.CHROMIUM_PATH].find(
  (p) => p && existsSync(p),
);
const HELDOUT = readFileSync('examples/tiny-tasks-heldout.jsonl', 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as { state: string; expected: { fact: boolean; pick: string; level: number } });

describe.skipIf(!CHROMIUM)('the playground, as a newcomer uses it', () => {
  let app: AssayServer;
  let base: string;
  let browser: Browser;
  const evaluators: Evaluator[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const tiny = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const trained = await ensureSynthModel({
      shape: 'tiny',
      dtype: 'int8',
      weights: 'models/trained/tiny-tasks.safetensors',
      out: 'models/generated/tiny-tasks-int8',
    });
    const synthetic = await loadEvaluator({ modelDir: tiny, variant: 'fp32', threads: 1 });
    const tasks = await loadEvaluator({ modelDir: trained, threads: 1 });
    evaluators.push(synthetic, tasks);
    // The shipped registry's two entries, with this test's folders.
    const shipped = JSON.parse(readFileSync('models/registry.json', 'utf8'));
    const registry = checkRegistry(
      {
        ...shipped,
        models: {
          'svc-1.13.0': { ...shipped.models['svc-1.13.0'], path: tiny },
          'tiny-tasks-1': { ...shipped.models['tiny-tasks-1'], path: trained },
        },
      },
      resolve('models/registry.json'),
    );
    app = await buildServer({
      registry,
      models: staticModels({ 'svc-1.13.0': synthetic, 'tiny-tasks-1': tasks }),
      keys: [...keysFromList(KEY), { name: 'limited', hash: sha256(LIMITED), requestsPerMinute: 2 }],
      logging: false,
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await Promise.all(evaluators.map((e) => e.close()));
  });

  /** The whole page fits the window (1280×2000): nothing scrolls, so a moving button moves under the pointer. */
  async function open(): Promise<{ page: Page; problems: string[]; sent: Request[] }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
    const problems: string[] = [];
    const sent: Request[] = [];
    // Chromium logs every non-2xx answer as a console error: these tests cause them on purpose.
    page.on(
      'console',
      (m) => m.type() === 'error' && !/status of (401|422|429)/.test(m.text()) && problems.push(m.text()),
    );
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('request', (r) => r.url().endsWith('/v1/systemone') && sent.push(r));
    await page.goto(`${base}/playground`);
    return { page, problems, sent };
  }

  /**
   * A person's click on Send: the pointer goes to the button, presses, rests a moment (here: until
   * whatever the press set off, such as the key field's change loading the models, has come back),
   * and lets go where it pressed. Returns how far the button moved meanwhile.
   */
  async function pressSend(page: Page, during?: Promise<unknown>): Promise<number> {
    const before = (await page.locator('#send').boundingBox())!;
    await page.mouse.move(before.x + before.width / 2, before.y + before.height / 2);
    await page.mouse.down();
    await during;
    await page.waitForTimeout(120);
    await page.mouse.up();
    const after = (await page.locator('#send').boundingBox())!;
    return Math.hypot(after.x - before.x, after.y - before.y);
  }

  /** A key pasted into the key field (one input event with the whole text, as a paste gives). */
  async function pasteKey(page: Page, key: string): Promise<void> {
    await page.locator('#key').fill('');
    await page.locator('#key').focus();
    await page.keyboard.insertText(key);
  }

  const errorLines = async (page: Page, selector = '#request-error') =>
    ((await page.locator(selector).textContent()) ?? '').split('\n').filter(Boolean);

  it('the first Send after an error is sent: the press on Send ends on Send, and the answers come', async () => {
    const { page, problems, sent } = await open();
    // The natural first mistake: Send before the key.
    await pressSend(page);
    await page.locator('#request-error').waitFor({ state: 'visible' });
    const before = sent.length;
    // Paste the key and press Send at once: the press blurs the key field, which loads the models.
    await pasteKey(page, KEY);
    const models = page.waitForResponse((r) => r.url().endsWith('/playground/models'));
    const moved = await pressSend(page, models);
    expect(moved).toBe(0);
    await page.locator('.answer[data-question="severity"]').waitFor({ timeout: 15_000 });
    expect(sent.slice(before).map((r) => r.headers().authorization)).toEqual([`Bearer ${KEY}`]);
    expect(await page.locator('#request-error').isVisible()).toBe(false);
    expect(await page.locator('#synthetic-banner').isVisible()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'newcomer-first-send.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a fresh page: the key pasted, Send pressed at once: the press is not lost to the model list arriving', async () => {
    const { page, problems, sent } = await open();
    await pasteKey(page, KEY);
    const models = page.waitForResponse((r) => r.url().endsWith('/playground/models'));
    expect(await pressSend(page, models)).toBe(0);
    await page.locator('.answer[data-question="severity"]').waitFor({ timeout: 15_000 });
    expect(sent).toHaveLength(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('an empty key says so, once however often Send is pressed; a wrong key is one 401 line', async () => {
    const { page, problems, sent } = await open();
    for (let i = 0; i < 3; i++) await pressSend(page);
    await page.locator('#request-error').waitFor({ state: 'visible' });
    const empty = await errorLines(page);
    expect(empty).toHaveLength(1);
    expect(empty[0]).toMatch(/no API key/i);
    expect(empty[0]).not.toMatch(/invalid/i);
    expect(sent).toHaveLength(0); // nothing to send without a key
    await pasteKey(page, 'sk-not-this-one');
    await page.keyboard.press('Tab');
    for (let i = 0; i < 3; i++) {
      const answered = page.waitForResponse((r) => r.url().endsWith('/v1/systemone'));
      await pressSend(page);
      await answered;
    }
    await expect
      .poll(() => errorLines(page))
      .toEqual([expect.stringMatching(/^HTTP 401: Invalid API key\. Check the API key\.$/)]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('after a 429 or a 422 the previous answers go, and the error says the wait once, beside the form', async () => {
    const { page, problems } = await open();
    await pasteKey(page, LIMITED);
    await page.keyboard.press('Tab');
    await pressSend(page);
    await page.locator('.answer[data-question="severity"]').waitFor();
    // The key's two requests a minute (the model list, one Send) are spent: a 429.
    await pressSend(page);
    await page.locator('#request-error').waitFor({ state: 'visible' });
    const limited = await errorLines(page);
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatch(/^HTTP 429: Rate limit exceeded/);
    expect(limited[0]!.match(/retry/gi)).toHaveLength(1); // the wait, said once
    expect(await page.locator('#answers .answer').count()).toBe(0);
    expect(await page.locator('#answers').textContent()).toContain('the error is above');
    // The error box sits beside the form, in the answers panel: where the answers would be.
    expect(
      await page.locator('#request-error').evaluate((e) => e.closest('section')?.getAttribute('aria-labelledby')),
    ).toBe('answers-heading');
    const box = (await page.locator('#request-error').boundingBox())!;
    expect(box.y).toBeLessThan(400);

    // A 422 (a score question with one level) after answers: the answers go; the card says it once, however often sent.
    await pasteKey(page, KEY);
    await page.keyboard.press('Tab');
    await pressSend(page);
    await page.locator('.answer[data-question="severity"]').waitFor();
    await page.click('[data-add="score"]');
    const card = page.locator('.question').last();
    await card.locator('.question-id').fill('scale');
    await card.locator('.instructions').fill('How much?');
    for (let i = 0; i < 2; i++) await card.locator('.row button').last().click();
    for (let i = 0; i < 2; i++) {
      const answered = page.waitForResponse((r) => r.url().endsWith('/v1/systemone'));
      await pressSend(page);
      await answered;
    }
    await card.locator('.field-error').waitFor({ state: 'visible' });
    expect(await errorLines(page, '.question:last-child .field-error')).toHaveLength(1);
    expect(await page.locator('#answers .answer').count()).toBe(0);
    expect(await page.locator('#request-error').isVisible()).toBe(false);
    // The answers panel points at where the error is: the question's card, not an empty box above.
    expect(await page.locator('#answers').textContent()).toContain('the error is shown in the form');
    await page.screenshot({ path: join(SHOTS, 'newcomer-422.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a state with a JSON typo is not sent as text: the page says so; "send as plain text" sends it as text', async () => {
    const { page, problems, sent } = await open();
    await pasteKey(page, KEY);
    await page.keyboard.press('Tab');
    const typo = '{"order": 1042, "status": "late",}';
    await page.locator('#state').fill(typo);
    await pressSend(page);
    const stateError = page.locator('[data-error-for="state"]');
    await stateError.waitFor({ state: 'visible' });
    expect(await stateError.textContent()).toMatch(/does not parse/);
    expect(sent).toHaveLength(0);
    await page.locator('#state-text').check();
    await pressSend(page);
    await page.locator('.answer[data-question="severity"]').waitFor();
    expect(JSON.parse(sent[0]!.postData()!).state).toBe(typo);
    expect(await stateError.isVisible()).toBe(false);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('tiny-tasks-1 is listed as knowing only its task; one click loads a held-out ticket, answered right', async () => {
    const { page, problems, sent } = await open();
    await pasteKey(page, KEY);
    await page.keyboard.press('Tab');
    // The list arrives when the models endpoint answers: on a loaded CI machine past vitest's 1 s default.
    await expect
      .poll(() => page.locator('#model option').allTextContents(), { timeout: 30_000 })
      .toContain('tiny-tasks-1 (knows only its training task; warm)');
    await page.click('#example');
    // The click fetches the held-out lines first (once), then fills the form: on a loaded machine not at once.
    await expect.poll(() => page.locator('#model').inputValue(), { timeout: 30_000 }).toBe('tiny-tasks-1');
    expect(await page.locator('#state').inputValue()).toBe(HELDOUT[0]!.state);
    expect(await page.locator('#synthetic-banner').isVisible()).toBe(false);
    expect(await page.locator('#expected').textContent()).toContain(`pick ${HELDOUT[0]!.expected.pick}`);
    await pressSend(page);
    await page.locator('.answer[data-question="level"]').waitFor();
    expect(JSON.parse(sent[0]!.postData()!).model).toBe('tiny-tasks-1');
    const { fact, pick, level } = HELDOUT[0]!.expected;
    expect(Number(await page.locator('.answer[data-question="fact"]').getAttribute('data-noul')) > 0.5).toBe(fact);
    expect(await page.locator('.answer[data-question="pick"]').getAttribute('data-choice')).toBe(pick);
    expect(await page.locator('.answer[data-question="level"] .bar-row.picked').getAttribute('data-label')).toMatch(
      new RegExp(`^${level}:`),
    );
    await page.screenshot({ path: join(SHOTS, 'newcomer-tiny-tasks.png'), fullPage: false });
    expect(problems).toEqual([]);
    await page.close();
  });
});

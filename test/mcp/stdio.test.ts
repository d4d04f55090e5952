// `assay mcp` as a desktop agent starts it (bin/assay.js over dist/, built by npm test first), driven
// by the official SDK's stdio client: the engine in-process, every tool called, an invalid call
// answered with its 422 details, decisions from a coverage report's thresholds; and with --url,
// the same tools through a running server under the key of ASSAY_API_KEY. stdout carries nothing
// but the protocol (the client would fail on anything else).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { KEY, startListening, type TestServer } from '../api/helpers.js';
import { tinyRegistry } from './helpers.js';

const BIN = resolve('bin/assay.js');

async function stdioClient(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', ...args],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d) => (err += d));
  const client = new Client({ name: 'assay-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => err };
}

const parsed = (r: any) => (r.isError ? { error: JSON.parse(r.content[0].text) } : r.structuredContent);

describe('assay mcp (stdio)', () => {
  let registry: string;
  let report: string;
  beforeAll(async () => {
    registry = await tinyRegistry();
    // A coverage report's thresholds, as `assay eval --dataset --out` writes them (report.json).
    report = join(mkdtempSync(join(tmpdir(), 'assay-report-')), 'report.json');
    writeFileSync(
      report,
      JSON.stringify({
        coverage: {
          thresholds: {
            '0.02': { noul: 0.999, choice: 0.9, score: null },
            '0.1': { noul: 0.5, choice: 0, score: 0.2 },
          },
        },
      }),
    );
  }, 120_000);

  it('serves every tool on the engine in-process; an invalid call is a tool error with its 422 details', async () => {
    const { client, stderr } = await stdioClient(['--registry', registry]);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
        'models',
        'check',
        'classify',
        'score',
        'evaluate',
      ]);
      const models = parsed(await client.callTool({ name: 'models', arguments: {} }));
      expect(models).toEqual({
        default: 'svc-1.13.0',
        models: [{ name: 'svc-latest', description: 'tiny synthetic', release_date: '2026-11-22' }],
      });
      const state = 'rm -rf /var/lib/postgresql';
      const check = parsed(
        await client.callTool({ name: 'check', arguments: { state, instructions: 'Is this command destructive?' } }),
      );
      expect(check.answer.type).toBe('noul');
      expect(check.answer.noul).toBeGreaterThanOrEqual(0);
      expect(check.answer.noul).toBeLessThanOrEqual(1);
      expect(check.decision).toBeUndefined();
      const classify = parsed(
        await client.callTool({
          name: 'classify',
          arguments: { state, instructions: 'Which kind?', criteria: { read: null, write: 'changes data' } },
        }),
      );
      expect(Object.keys(classify.answer.probabilities)).toEqual(['read', 'write']);
      const score = parsed(
        await client.callTool({
          name: 'score',
          arguments: { state, instructions: 'How risky?', criteria: ['safe', 'risky', 'fatal'] },
        }),
      );
      expect(Object.keys(score.answer.legend)).toEqual(['0', '1', '2']);
      const whole = parsed(
        await client.callTool({
          name: 'evaluate',
          arguments: { state, questions: { destructive: { type: 'noul', instructions: 'Destructive?' } } },
        }),
      );
      expect(Object.keys(whole.answers)).toEqual(['destructive']);
      expect(whole.usage.input_tokens).toBeGreaterThan(0);
      const bad = parsed(
        await client.callTool({ name: 'score', arguments: { state, instructions: 'q', criteria: ['only one'] } }),
      );
      expect(bad.error.status).toBe(422);
      expect(bad.error.detail[0]).toMatchObject({ type: 'too_short', loc: ['arguments', 'criteria'] });
    } finally {
      await client.close();
    }
    expect(stderr()).toMatch(/synthetic model with random weights/);
  });

  it('--thresholds FILE#ACT,REVIEW: act, review or abstain by the report budgets, with the thresholds that gave it', async () => {
    const { client } = await stdioClient(['--registry', registry, '--thresholds', `${report}#0.02,0.1`]);
    try {
      const check = parsed(await client.callTool({ name: 'check', arguments: { state: 'x', instructions: 'q' } }));
      const c = Math.max(check.answer.noul, 1 - check.answer.noul);
      expect(check.decision).toEqual({
        decision: c >= 0.999 ? 'act' : 'review',
        certainty: c,
        act_threshold: 0.999,
        review_threshold: 0.5,
      });
      // score has no 2% threshold (null in the report): no decision for it.
      const score = parsed(
        await client.callTool({ name: 'score', arguments: { state: 'x', instructions: 'q', criteria: ['a', 'b'] } }),
      );
      expect(score.decision).toBeUndefined();
      const classify = parsed(
        await client.callTool({ name: 'classify', arguments: { state: 'x', instructions: 'q', criteria: ['a', 'b'] } }),
      );
      expect(classify.decision.act_threshold).toBe(0.9);
      expect(classify.decision.decision).toBe(classify.answer.confidence >= 0.9 ? 'act' : 'review');
    } finally {
      await client.close();
    }
  });

  it('refuses a bad --thresholds with exit 2, naming the budgets the report has', async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, [BIN, 'mcp', '--registry', registry, '--thresholds', `${report}#0.05`], {
      encoding: 'utf8',
      input: '',
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no thresholds for budget 0\.05 \(it has 0\.02, 0\.1\)/);
  });

  describe('--url: through a running server', () => {
    let server: TestServer & { base: string };
    beforeAll(async () => {
      server = await startListening();
    }, 120_000);
    afterAll(async () => server.close());

    it('answers with the server under ASSAY_API_KEY, its refusals as tool errors', async () => {
      const { client } = await stdioClient(['--url', server.base], { ASSAY_API_KEY: KEY });
      try {
        const models = parsed(await client.callTool({ name: 'models', arguments: {} }));
        expect(models.default).toBe('svc-latest');
        expect(models.models.map((m: any) => m.name)).toEqual(['svc-latest', 'svc-preview']);
        const check = parsed(
          await client.callTool({ name: 'check', arguments: { state: 'hello', instructions: 'A greeting?' } }),
        );
        expect(check.model).toBe('svc-1.13.0');
        const bad = parsed(
          await client.callTool({ name: 'classify', arguments: { state: 'x', instructions: 'q', criteria: {} } }),
        );
        expect(bad.error).toMatchObject({
          status: 422,
          detail: [{ type: 'too_short', loc: ['arguments', 'criteria'] }],
        });
      } finally {
        await client.close();
      }
      const { client: wrong } = await stdioClient(['--url', server.base], { ASSAY_API_KEY: 'wrong-key' });
      try {
        const refused = parsed(await wrong.callTool({ name: 'check', arguments: { state: 'x', instructions: 'q' } }));
        expect(refused.error.status).toBe(401);
      } finally {
        await wrong.close();
      }
    });
  });
});

// One CLI: every client command finds its server and key the same way (--url / ASSAY_BASE_URL,
// --key / ASSAY_API_KEY), the server takes ASSAY_API_KEY as a key, --format's default is what the
// help says, messages name the CLI's own flags, and a synthetic model is called "served" only
// where something is served.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { run as batchCmd } from '../../src/commands/batch.js';
import { run as evalCmd } from '../../src/commands/eval.js';
import { run as modelsCmd } from '../../src/commands/models.js';
import { load, ps, reload, unload } from '../../src/commands/operator.js';
import { startServe, tinyRegistryFile, type ServeProcess } from '../serve-process.js';

type Cmd = (argv: string[], io: object) => Promise<number>;

async function cli(cmd: Cmd, argv: string[], env: Record<string, string | undefined> = {}) {
  let out = '';
  let err = '';
  const sink = (f: (t: string) => void) =>
    new Writable({
      write(c: Buffer, _e, cb) {
        f(c.toString());
        cb();
      },
    });
  const code = await cmd(argv, {
    stdout: sink((t) => (out += t)),
    stderr: sink((t) => (err += t)),
    env: { PATH: process.env.PATH, ...env },
  });
  return { code, out, err };
}

/** The default --format a command's help states: "json (default…" or "table (default)". */
function helpDefault(help: string): string | undefined {
  return /--format F\s+(json|table) \(default/.exec(help)?.[1];
}

const isJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

let dir: string;
let registry: string;
let server: ServeProcess;
const KEY = 'sk-one-cli-key';

beforeAll(async () => {
  const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  dir = mkdtempSync(join(tmpdir(), 'assay-one-cli-'));
  registry = tinyRegistryFile(dir, modelDir);
  // ASSAY_API_KEY alone (the variable the CLI sends), no ASSAY_API_KEYS, no keys file.
  server = await startServe(registry, [], { ASSAY_API_KEYS: '', ASSAY_API_KEY: KEY });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

describe('the server and ASSAY_API_KEY', () => {
  it('serves ASSAY_API_KEY as its key (the operator key when it is the only one), generating none', async () => {
    const res = await fetch(`${server.base}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    expect(server.out()).not.toContain('so one was generated');
    const admin = await fetch(`${server.base}/admin/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(admin.status).toBe(200);
  });
});

describe('every client command reads --url / ASSAY_BASE_URL and --key / ASSAY_API_KEY', () => {
  it('assay ps without --url asks ASSAY_BASE_URL with ASSAY_API_KEY', async () => {
    const r = await cli(ps, [], { ASSAY_BASE_URL: server.base, ASSAY_API_KEY: KEY });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^NAME\s+FAMILY\s+SIZE/);
  });

  it('--url and --key win over the variables, for every command', async () => {
    const wrong = { ASSAY_BASE_URL: 'http://127.0.0.1:9', ASSAY_API_KEY: 'sk-wrong' };
    const flags = ['--url', server.base, '--key', KEY];
    expect((await cli(ps, flags, wrong)).code).toBe(0);
    expect((await cli(modelsCmd, flags, wrong)).code).toBe(0);
    expect((await cli(reload, flags, wrong)).code).toBe(0);
    expect((await cli(load, ['svc-1.13.0', ...flags], wrong)).code).toBe(0);
    const state = join(dir, 'state.txt');
    const questions = join(dir, 'q.json');
    writeFileSync(state, 'The app crashes.');
    writeFileSync(questions, JSON.stringify({ bug: { type: 'noul', instructions: 'A bug?' } }));
    const e = await cli(evalCmd, ['--state', state, '--questions', questions, ...flags], wrong);
    expect(e.err).toBe('');
    expect(e.code).toBe(0);
  });

  it('assay models and assay eval go to ASSAY_BASE_URL when it is set (no --url)', async () => {
    const r = await cli(modelsCmd, [], { ASSAY_BASE_URL: server.base, ASSAY_API_KEY: KEY });
    expect(r.code).toBe(0);
    // The server's list: its aliases, not the local registry's table of folders.
    expect((JSON.parse(r.out) as { models: { name: string }[] }).models.map((m) => m.name)).toContain('svc-latest');
  });

  it('without a key, every client command says to pass --key or set ASSAY_API_KEY (not the SDK\'s "apiKey")', async () => {
    const input = join(dir, 'in.jsonl');
    writeFileSync(
      input,
      '{"custom_id":"a","body":{"state":"x","questions":{"q":{"type":"noul","instructions":"?"}}}}\n',
    );
    const env = { ASSAY_BASE_URL: server.base };
    for (const [cmd, argv] of [
      [batchCmd, [input]],
      [ps, []],
      [unload, ['svc-1.13.0']],
      [modelsCmd, []],
    ] as [Cmd, string[]][]) {
      const r = await cli(cmd, argv, env);
      expect(r.code).toBe(2);
      expect(r.err).toContain('pass --key KEY or set ASSAY_API_KEY');
      expect(r.err).not.toContain('apiKey');
    }
  });
});

describe('--format: the help says the default the command applies', () => {
  it('ps: the help names table, and without --format it prints the table; load takes no --format', async () => {
    const help = await cli(ps, ['--help']);
    expect(helpDefault(help.out)).toBe('table');
    const r = await cli(ps, ['--url', server.base, '--key', KEY]);
    expect(isJson(r.out)).toBe(false);
    const j = await cli(ps, ['--url', server.base, '--key', KEY, '--format', 'json']);
    expect(isJson(j.out)).toBe(true);
    // load / unload / reload print the server's JSON; a --format they would ignore is refused.
    for (const cmd of [load, unload, reload]) {
      expect((await cli(cmd, ['--help'])).out).not.toContain('--format');
      const t = await cli(cmd, ['svc-1.13.0', '--format', 'table', '--url', server.base, '--key', KEY]);
      expect(t.code).toBe(2);
    }
  });

  it('models and eval: the help names json, and without --format they print JSON', async () => {
    const help = await cli(modelsCmd, ['--help']);
    expect(helpDefault(help.out)).toBe('json');
    const r = await cli(modelsCmd, ['--registry', registry]);
    expect(r.code).toBe(0);
    expect(isJson(r.out)).toBe(true);
    expect(helpDefault((await cli(evalCmd, ['--help'])).out)).toBe('json');
  });
});

describe('the synthetic-model warning', () => {
  it('assay eval answering on a synthetic model says so, without calling it served or naming a dev script', async () => {
    const state = join(dir, 'state2.txt');
    const questions = join(dir, 'q2.json');
    writeFileSync(state, 'The app crashes.');
    writeFileSync(questions, JSON.stringify({ bug: { type: 'noul', instructions: 'A bug?' } }));
    const r = await cli(evalCmd, ['--state', state, '--questions', questions, '--registry', registry]);
    expect(r.code).toBe(0);
    expect(r.err).toContain('synthetic model with random weights: its answers are meaningless');
    expect(r.err).not.toContain('SERVING');
    expect(r.err).not.toContain('npm run');
  }, 60_000);

  it('the server, which serves it, still warns loudly, naming the CLI (not a dev script)', () => {
    expect(server.out()).toContain('SERVING A SYNTHETIC RANDOM-WEIGHT MODEL');
    expect(server.out()).not.toContain('npm run models:fetch');
  });
});

describe('generated model folders', () => {
  it("tiny-tasks-1's assay.json names only files that exist in the checkout", async () => {
    const folder = await ensureSynthModel({
      shape: 'tiny',
      dtype: 'fp32',
      weights: join('models', 'trained', 'tiny-tasks.safetensors'),
      out: join(dir, 'tiny-tasks'),
    });
    const manifest = readFileSync(join(folder, 'assay.json'), 'utf8');
    const paths = manifest.match(/[\w./-]+\.(?:ts|py)\b/g) ?? [];
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(() => readFileSync(p), p).not.toThrow();
  }, 120_000);
});

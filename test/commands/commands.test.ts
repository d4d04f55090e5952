// `assay eval` and `assay models`, called through run() with captured output: the local engine
// on a registry of the tiny synthetic model, and the same through a real server (--url).
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemOneResponseSchema } from '../../src/protocol/schemas.js';
import { run as evalCmd } from '../../src/commands/eval.js';
import { run as modelsCmd } from '../../src/commands/models.js';
import { KEY, startServer, type TestServer } from '../api/helpers.js';

let tmp: string;
let registry: string;
let srv: TestServer;
let url: string;
let stateFile: string;
let questionsFile: string;

const STATE = { ticket: 'T-77', text: 'The app crashes every time I open the settings page.' };
const QUESTIONS = {
  bug: { type: 'noul', instructions: 'Is this a bug report?' },
  area: {
    type: 'choice',
    instructions: 'Which area?',
    criteria: { settings: null, login: 'sign-in and accounts', billing: null },
  },
  severity: { type: 'score', instructions: 'How severe?', criteria: ['cosmetic', 'annoying', 'blocking'] },
};

beforeAll(async () => {
  srv = await startServer();
  await srv.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(srv.app.server.address() as AddressInfo).port}`;
  tmp = await mkdtemp(path.join(tmpdir(), 'assay-cmd-'));
  // The same model folder the server runs, under the same versioned id.
  registry = path.join(tmp, 'registry.json');
  await writeFile(
    registry,
    JSON.stringify({
      default: 'svc-1.13.0',
      models: {
        'svc-1.13.0': {
          path: srv.evaluator.modelDir,
          variant: 'fp32',
          description: 'tiny synthetic',
          release_date: '2026-11-22',
        },
      },
      aliases: { 'svc-latest': 'svc-1.13.0', 'svc-preview': 'svc-1.13.0' },
    }),
  );
  stateFile = path.join(tmp, 'state.json');
  await writeFile(stateFile, JSON.stringify(STATE));
  questionsFile = path.join(tmp, 'questions.json');
  await writeFile(questionsFile, JSON.stringify(QUESTIONS));
});
afterAll(async () => {
  await srv?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

function capture() {
  const chunks = { out: [] as string[], err: [] as string[] };
  const sink = (into: string[]) =>
    new Writable({
      write(c, _e, cb) {
        into.push(String(c));
        cb();
      },
    });
  return {
    stdout: sink(chunks.out),
    stderr: sink(chunks.err),
    out: () => chunks.out.join(''),
    err: () => chunks.err.join(''),
  };
}

async function evalRun(args: string[], stdin?: string) {
  const io = capture();
  const input = new PassThrough();
  input.end(stdin ?? '');
  const code = await evalCmd(args, { stdout: io.stdout, stderr: io.stderr, stdin: input, env: { ASSAY_API_KEY: KEY } });
  return { code, out: io.out(), err: io.err() };
}

async function modelsRun(args: string[], env: Record<string, string> = { ASSAY_API_KEY: KEY }) {
  const io = capture();
  const code = await modelsCmd(args, { stdout: io.stdout, stderr: io.stderr, env });
  return { code, out: io.out(), err: io.err() };
}

describe('assay eval', () => {
  it('answers on a local engine (the registry default) and on a server (--url) identically', async () => {
    const local = await evalRun(['--state', stateFile, '--questions', questionsFile, '--registry', registry]);
    expect(local.code).toBe(0);
    // A random-weight model is announced, once (as what answers here: nothing is served).
    expect(local.err.match(/synthetic model with random weights/g)).toHaveLength(1);
    const localBody = SystemOneResponseSchema.parse(JSON.parse(local.out));
    expect(localBody.model).toBe('svc-1.13.0');
    expect(Object.keys(localBody.answers)).toEqual(['bug', 'area', 'severity']);

    const remote = await evalRun(['--state', stateFile, '--questions', questionsFile, '--url', url]);
    expect(remote.code).toBe(0);
    // Same model folder, same engine: the same answers and usage, to the last bit.
    expect(JSON.parse(remote.out)).toEqual(localBody);
  });

  it('reads the state from stdin with -, plain text as a string; a request body works as --questions', async () => {
    const bodyFile = path.join(tmp, 'request.json');
    await writeFile(
      bodyFile,
      JSON.stringify({ state: 'ignored', model: 'svc-latest', questions: { bug: QUESTIONS.bug } }),
    );
    const piped = await evalRun(
      ['--state', '-', '--questions', bodyFile, '--registry', registry],
      'The app crashes on start.\n',
    );
    expect(piped.code).toBe(0);
    const fromFile = path.join(tmp, 'state.txt');
    await writeFile(fromFile, 'The app crashes on start.');
    const direct = await evalRun(['--state', fromFile, '--questions', bodyFile, '--registry', registry]);
    expect(JSON.parse(piped.out)).toEqual(JSON.parse(direct.out));
    expect(Object.keys(JSON.parse(piped.out).answers)).toEqual(['bug']);
  });

  it('keeps the order the file lists questions and options in, local and --url, in JSON and in the table', async () => {
    // Written as text: a JS object would list "1" before "3".
    const text =
      '{"10": {"type": "choice", "instructions": "Which?", "criteria": {"3": "three", "b": null, "1": "one"}},' +
      ' "9": {"type": "noul", "instructions": "A bug?"}}';
    const file = path.join(tmp, 'ordered.json');
    await writeFile(file, text);
    const bodyFile = path.join(tmp, 'ordered-body.json');
    await writeFile(bodyFile, `{"state": "x", "model": "svc-latest", "questions": ${text}}`);
    const local = await evalRun(['--state', stateFile, '--questions', file, '--registry', registry]);
    expect(local.code, local.err).toBe(0);
    expect(local.out).toMatch(
      /"answers": \{\n {4}"10": \{[^]*"probabilities": \{\n {8}"3": [^]*"b": [^]*"1": [^]*\n {4}"9": \{/,
    );
    // The same prompt as the server's for the same text, and laid out as JSON.stringify(…, null, 2) would.
    const posted = await fetch(`${url}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: `{"state": ${JSON.stringify(STATE)}, "model": "svc-latest", "questions": ${text}}`,
    });
    expect(JSON.parse(local.out)).toEqual(await posted.json());
    expect(JSON.stringify(JSON.parse(local.out), null, 2).length).toBe(local.out.length - 1);

    const remote = await evalRun(['--state', stateFile, '--questions', bodyFile, '--url', url]);
    expect(remote.code, remote.err).toBe(0);
    expect(remote.out).toBe(local.out);
    const table = await evalRun([
      '--state',
      stateFile,
      '--questions',
      file,
      '--registry',
      registry,
      '--format',
      'table',
    ]);
    const rows = table.out.split('\n').filter((l) => /^(10|9) /.test(l));
    expect(rows.map((r) => r.split(' ')[0])).toEqual(['10', '9']);
    expect(rows[0]).toMatch(/ 3 \d\.\d{3} {2}b \d\.\d{3} {2}1 \d\.\d{3}/);
  });

  it('prints a readable table', async () => {
    const r = await evalRun([
      '--state',
      stateFile,
      '--questions',
      questionsFile,
      '--registry',
      registry,
      '--format',
      'table',
    ]);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^model svc-1\.13\.0 {3}input_tokens \d+ {3}output_tokens \d+$/);
    expect(lines[1]).toMatch(/^QUESTION\s+TYPE\s+ANSWER\s+CONFIDENCE\s+PROBABILITIES$/);
    expect(lines.slice(2).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['bug', 'noul'],
      ['area', 'choice'],
      ['severity', 'score'],
    ]);
    expect(lines[3]).toMatch(/settings 0\.\d{3} {2}login 0\.\d{3} {2}billing 0\.\d{3}$/);
  });

  it('reports an invalid question the way the server does, exit 2, without loading a model', async () => {
    const bad = path.join(tmp, 'bad.json');
    await writeFile(bad, JSON.stringify({ c: { type: 'choice', instructions: 'x', criteria: {} } }));
    const r = await evalRun(['--state', stateFile, '--questions', bad, '--registry', registry]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('body.questions.c.choice.criteria: Dictionary should have at least 1 item');
    expect(r.out).toBe('');
  });

  it('a server error is reported with its status and request id, exit 1', async () => {
    const io = capture();
    const input = new PassThrough();
    input.end();
    const code = await evalCmd(['--state', stateFile, '--questions', questionsFile, '--url', url], {
      stdout: io.stdout,
      stderr: io.stderr,
      stdin: input,
      env: { ASSAY_API_KEY: 'wrong' },
    });
    expect(code).toBe(1);
    expect(io.err()).toMatch(/^assay eval: 401 Invalid API key; request id req_\w+\n$/);
  });

  it('usage: --help exits 0, missing flags and bad formats exit 2', async () => {
    const help = await evalRun(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: assay eval --state FILE|- --questions FILE');
    expect((await evalRun(['--state', stateFile])).code).toBe(2);
    const fmt = await evalRun(['--state', stateFile, '--questions', questionsFile, '--format', 'xml']);
    expect(fmt.code).toBe(2);
    expect(fmt.err).toContain('--format must be json or table');
    expect((await evalRun(['--bogus'])).code).toBe(2);
    const missing = await evalRun(['--state', path.join(tmp, 'nope.json'), '--questions', questionsFile]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('cannot read --state');
  });
});

describe('assay models', () => {
  it('lists a local registry as the server would, and a server the same', async () => {
    const local = await modelsRun(['--registry', registry]);
    expect(local.code).toBe(0);
    const remote = await modelsRun(['--url', url]);
    expect(remote.code).toBe(0);
    expect(JSON.parse(remote.out)).toEqual(JSON.parse(local.out));
    expect(JSON.parse(local.out).models.map((m: { name: string }) => m.name)).toEqual(['svc-latest', 'svc-preview']);
  });

  it('the shipped registry lists tiny-tasks-1 and tiny-decider-1, marked as knowing only their support-ticket task', async () => {
    const r = await modelsRun(['--registry', 'models/registry.json']);
    expect(r.code).toBe(0);
    const models = JSON.parse(r.out).models as Array<{ name: string; description: string }>;
    expect(models.map((m) => m.name)).toEqual(['svc-latest', 'svc-preview', 'tiny-tasks-1', 'tiny-decider-1']);
    expect(models[2]!.description).toMatch(/^Knows only its support-ticket task/);
    expect(models[3]!.description).toMatch(/^Knows only the support-ticket task, asked through the decider contract/);
  });

  it('table: local rows show the versioned id, folder and model family behind each name', async () => {
    const r = await modelsRun(['--registry', registry, '--format', 'table']);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+RELEASED\s+RESOLVES TO\s+FAMILY\s+DESCRIPTION$/);
    expect(lines[1]).toContain(
      `svc-latest   2026-11-22  svc-1.13.0 (${srv.evaluator.modelDir})  decoder  tiny synthetic`,
    );
    // A family folder says its family: declared by its decision.json, or by the registry's `family`.
    const nli = path.join(tmp, 'nli-folder');
    await mkdir(nli, { recursive: true });
    await writeFile(path.join(nli, 'decision.json'), JSON.stringify({ layout: 'nli-pairs-v1' }));
    const reg = path.join(tmp, 'family-registry.json');
    const entry = (p: string, extra = {}) => ({
      path: p,
      description: 'd',
      release_date: '2026-11-27',
      listed: true,
      ...extra,
    });
    await writeFile(
      reg,
      JSON.stringify({
        default: 'nli-1',
        models: { 'nli-1': entry(nli), 'laya-1': entry(nli, { family: 'laya-markers' }) },
      }),
    );
    const t = await modelsRun(['--registry', reg, '--format', 'table']);
    expect(t.out).toMatch(/^laya-1 .* laya-markers +d$/m);
    expect(t.out).toMatch(/^nli-1 .* nli-pairs +d$/m);
  });

  it('a remote without a key says so (a usage error: exit 2); --help exits 0', async () => {
    const r = await modelsRun(['--url', url], {});
    expect(r.code).toBe(2);
    expect(r.err).toContain('pass --key KEY or set ASSAY_API_KEY');
    const help = await modelsRun(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('assay models fetch');
  });

  it('synth: writes the synthetic models a registry declares when their folder is missing, once', async () => {
    const reg = path.join(tmp, 'synth-registry.json');
    await writeFile(
      reg,
      JSON.stringify({
        default: 'svc-s',
        models: {
          'svc-s': {
            path: 'made/tiny',
            synthetic: { shape: 'tiny', dtype: 'fp32' },
            description: 'tiny',
            release_date: '2026-11-22',
          },
        },
        aliases: {},
      }),
    );
    const first = await modelsRun(['synth', '--registry', reg]);
    expect(first.code).toBe(0);
    expect(first.err).toContain('model svc-s: folder');
    const manifest = JSON.parse(await readFile(path.join(tmp, 'made', 'tiny', 'assay.json'), 'utf8')) as {
      synthetic: boolean;
      shape: string;
    };
    expect(manifest).toMatchObject({ synthetic: true, shape: 'tiny' });
    // stdout: the folder, written or found complete (as its help says).
    expect(first.out).toBe(`${path.join(tmp, 'made', 'tiny')}\n`);
    const again = await modelsRun(['synth', '--registry', reg]);
    expect([again.code, again.err, again.out]).toEqual([0, '', first.out]);
    const bad = await modelsRun(['synth', '--shape', 'huge']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--shape must be one of tiny, qwen2.5-0.5b, qwen3-0.6b, qwen3.5-0.8b');
  });
});

describe('assay --version', () => {
  it("prints the package's version", async () => {
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', '--version'], { encoding: 'utf8' });
    expect(out).toBe(`assay ${pkg.version}\n`);
  });
});

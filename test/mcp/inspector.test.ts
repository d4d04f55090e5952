// A real MCP client from npm driven from the command line, as a person would try a server: the
// official inspector's CLI (@modelcontextprotocol/inspector-cli 1.0.3, pinned: the 2.x inspector
// takes the same arguments but needs Node 22, past our engines field) lists and calls every
// tool against `assay mcp` (stdio) and against a server's /mcp with a key (Streamable HTTP), and
// shows an invalid call's error.
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, startListening, type TestServer } from '../api/helpers.js';
import { tinyRegistry } from './helpers.js';

const CLI = resolve('node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
// 1.0.3 reads its own package.json as "../package.json" against the working directory, not its own
// folder: run it from its build folder, where that path is its own.
const CWD = dirname(CLI);

/** One inspector CLI run: its JSON output (stdout), or its failure. */
function inspect(
  target: string[],
  method: string[],
): Promise<{ code: number | null; json?: any; out: string; err: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [CLI, '--cli', ...target, '--method', ...method], { cwd: CWD });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      let json: any;
      try {
        json = JSON.parse(out);
      } catch {
        json = undefined;
      }
      res({ code, json, out, err });
    });
  });
}

const CALLS: Array<[tool: string, args: string[]]> = [
  ['models', []],
  ['check', ['state=rm -rf /var/lib/postgresql', 'instructions=Is this command destructive?']],
  [
    'classify',
    [
      'state=My package never arrived.',
      'instructions=Which queue?',
      'criteria={"shipping": null, "billing": "charges"}',
    ],
  ],
  [
    'score',
    ['state=The app crashes on launch.', 'instructions=How severe?', 'criteria=["cosmetic", "annoying", "blocking"]'],
  ],
  ['evaluate', ['state=Refund please.', 'questions={"refund": {"type": "noul", "instructions": "Refund asked?"}}']],
];

const toolArgs = (args: string[]) => args.flatMap((a) => ['--tool-arg', a]);

/** Every tool through the CLI against `target`, and one invalid call. */
async function everyTool(target: string[]): Promise<void> {
  const listed = await inspect(target, ['tools/list']);
  expect(listed.code, listed.err).toBe(0);
  expect(listed.json.tools.map((t: any) => t.name)).toEqual(['models', 'check', 'classify', 'score', 'evaluate']);
  for (const [tool, args] of CALLS) {
    const r = await inspect(target, ['tools/call', '--tool-name', tool, ...toolArgs(args)]);
    expect([tool, r.code, r.json?.isError]).toEqual([tool, 0, undefined]);
    expect(r.json.content[0].type).toBe('text');
    if (tool === 'models') expect(r.json.structuredContent.models.length).toBeGreaterThan(0);
    else if (tool === 'evaluate') expect(r.json.structuredContent.answers.refund.type).toBe('noul');
    else expect(r.json.structuredContent.answer.type).toBe({ check: 'noul', classify: 'choice', score: 'score' }[tool]);
  }
  const bad = await inspect(target, [
    'tools/call',
    '--tool-name',
    'classify',
    ...toolArgs(['state=x', 'instructions=q', 'criteria={}']),
  ]);
  expect(bad.json.isError).toBe(true);
  expect(JSON.parse(bad.json.content[0].text)).toMatchObject({
    status: 422,
    detail: [{ type: 'too_short', loc: ['arguments', 'criteria'] }],
  });
}

describe('the MCP inspector CLI (a real client from npm)', () => {
  let registry: string;
  let server: TestServer & { base: string };
  beforeAll(async () => {
    registry = await tinyRegistry();
    server = await startListening();
  }, 120_000);
  afterAll(async () => server.close());

  it('lists and calls every tool of `assay mcp` over stdio', async () => {
    await everyTool([process.execPath, resolve('bin/assay.js'), 'mcp', '--registry', registry]);
  }, 180_000);

  it("lists and calls every tool of the server's /mcp with a key; without one it fails", async () => {
    const url = `${server.base}/mcp`;
    await everyTool([url, '--transport', 'http', '--header', `Authorization: Bearer ${KEY}`]);
    const anonymous = await inspect([url, '--transport', 'http'], ['tools/list']);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.err + anonymous.out).toMatch(/auth_required|Not authenticated|401/);
  }, 180_000);
});

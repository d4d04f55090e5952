// Both images, CPU (Dockerfile) and GPU (Dockerfile.gpu), read as Docker reads them (dockerfile-ast;
// no Docker engine runs here): multi-stage, non-root, a health check on a route the server
// serves, and no other platform's onnxruntime binaries. The build stage's pruning commands are run,
// as written, on a copy of onnxruntime-node's binary folder layout, and what is left is checked.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser, type Copy, type Instruction } from 'dockerfile-ast';
import { describe, expect, it } from 'vitest';
import { PROBE_PATHS } from '../../src/api/routes/probes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ORT_BIN = path.join(root, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6');

/** The folders (platform/arch) onnxruntime-node ships binaries for, as installed here. */
function ortLayout(): string[] {
  return readdirSync(ORT_BIN).flatMap((platform) =>
    readdirSync(path.join(ORT_BIN, platform)).map((arch) => `${platform}/${arch}`),
  );
}

/** What is left of onnxruntime-node's binaries after the build stage's own commands run on them. */
function pruned(run: string, env: Record<string, string>): string[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'assay-ort-'));
  const bin = path.join(dir, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6');
  for (const folder of ortLayout()) {
    mkdirSync(path.join(bin, folder), { recursive: true });
    writeFileSync(path.join(bin, folder, 'onnxruntime_binding.node'), '');
  }
  // From the step that names the ARCH (or enters the binaries' folder) to the end of the RUN.
  const start = Math.max(0, run.search(/ARCH=|cd node_modules\/onnxruntime-node/));
  execFileSync('sh', ['-ec', run.slice(start)], { cwd: dir, env: { PATH: process.env.PATH!, ...env } });
  return readdirSync(bin).flatMap((p) => readdirSync(path.join(bin, p)).map((a) => `${p}/${a}`));
}

const IMAGES = [
  { file: 'Dockerfile', runtimeBase: '${NODE_IMAGE}', provider: 'cpu' },
  { file: 'Dockerfile.gpu', runtimeBase: '${CUDA_IMAGE}', provider: 'cuda' },
];

describe.each(IMAGES)('$file', ({ file, runtimeBase, provider }) => {
  const text = readFileSync(path.join(root, file), 'utf8');
  const dockerfile = DockerfileParser.parse(text);
  const instructions = dockerfile.getInstructions();
  const stages = instructions.reduce<Instruction[][]>((acc, i) => {
    if (i.getKeyword() === 'FROM') acc.push([]);
    acc.at(-1)?.push(i);
    return acc;
  }, []);
  const [build, runtime] = [stages[0]!, stages.at(-1)!];
  const args = (i: Instruction) => i.getArgumentsContent() ?? '';

  it('has a build stage and a runtime stage that copies only from it', () => {
    expect(stages).toHaveLength(2);
    expect(args(build[0]!)).toMatch(/ AS build$/);
    expect(args(runtime[0]!)).toBe(`${runtimeBase} AS runtime`);
    const copies = runtime.filter((i) => i.getKeyword() === 'COPY');
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) expect((c as Copy).getFromFlag()?.getValue(), args(c)).toBe('build');
    expect(runtime.some((i) => i.getKeyword() === 'RUN' && /\brm\b/.test(args(i)))).toBe(false);
  });

  it('runs as a non-root user, on the provider it is built for', () => {
    const user = runtime.filter((i) => i.getKeyword() === 'USER').at(-1);
    expect(user && args(user)).toBe('assay');
    expect(text).toMatch(/useradd --system --uid 10001/);
    expect(text).toContain(`ASSAY_PROVIDER=${provider}`);
  });

  it('checks its health on a route the server serves', () => {
    const hc = runtime.find((i) => i.getKeyword() === 'HEALTHCHECK');
    const route = /127\.0\.0\.1:'\+\(process\.env\.PORT\|\|8080\)\+'(\/[a-z]+)'/.exec(hc ? args(hc) : '')?.[1];
    expect(['/healthz', ...PROBE_PATHS]).toContain(route);
  });

  it("keeps only its own platform's onnxruntime binaries (the build stage's commands, run on the package's layout)", () => {
    const run = build.filter((i) => i.getKeyword() === 'RUN').find((i) => args(i).includes('onnxruntime-node/bin'));
    expect(run).toBeDefined();
    // The package really ships other platforms (else this proves nothing).
    expect(ortLayout()).toEqual(expect.arrayContaining(['darwin/arm64', 'linux/x64', 'win32/x64']));
    const script = args(run!).replace(/\\\n/g, ' ');
    expect(pruned(script, { TARGETARCH: 'amd64' })).toEqual(['linux/x64']);
    if (provider === 'cpu') expect(pruned(script, { TARGETARCH: 'arm64' })).toEqual(['linux/arm64']);
  });
});

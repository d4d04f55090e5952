// `assay serve` as a user starts it (bin/assay.js over dist/, built by npm test first): started with
// a registry and flags, waited on until it logs "ready", stopped; its stdout (the log) comes back.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';

/** A data directory of its own for each server a test starts (its batches are its own). */
function freshDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'assay-data-'));
}

export async function serveLog(registry: string, flags: string[] = [], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(
    process.execPath,
    ['bin/assay.js', 'serve', '--port', '0', '--threads', '1', '--registry', registry, ...flags],
    { env: { ASSAY_DATA_DIR: freshDataDir(), ...env, ASSAY_API_KEYS: 'log-key' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  try {
    for (let i = 0; !/ready/.test(out); i++) {
      if (child.exitCode !== null) throw new Error(`serve exited: ${out}`);
      expect(i).toBeLessThan(600);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    child.kill('SIGTERM');
  }
  await exited;
  return out;
}

export interface ServeProcess {
  base: string;
  pid: number;
  /** Everything it wrote so far (stdout and stderr). */
  out(): string;
  /** Its exit code once it has exited (null: killed by a signal); undefined while it runs. */
  exitCode(): number | null | undefined;
  /** Resolves with its exit code when it exits by itself. */
  exited: Promise<number | null>;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
}

/**
 * `assay serve` started and left running: resolves once /healthz answers 200. `via` runs it through
 * another program (e.g. a shell that first moves itself into a cgroup), given the command line.
 */
export async function startServe(
  registry: string,
  flags: string[],
  env: NodeJS.ProcessEnv,
  via?: (argv: string[]) => [string, string[]],
): Promise<ServeProcess> {
  const argv = [
    process.execPath,
    'bin/assay.js',
    'serve',
    '--port',
    '0',
    '--threads',
    '1',
    '--registry',
    registry,
    ...flags,
  ];
  const [file, args] = via ? via(argv) : [argv[0]!, argv.slice(1)];
  const child = spawn(file, args, {
    env: { ...process.env, ASSAY_DATA_DIR: freshDataDir(), HOST: '127.0.0.1', ASSAY_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((r) =>
    child.on('exit', (code) => {
      exitCode = code;
      r(code);
    }),
  );
  const base = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    child.stdout.on('data', check);
    child.on('exit', () => reject(new Error(`serve exited early:\n${out}`)));
  });
  for (let i = 0; (await fetch(`${base}/healthz`)).status !== 200; i++) {
    expect(i).toBeLessThan(1200);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    pid: child.pid!,
    out: () => out,
    exitCode: () => exitCode,
    exited,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A registry file in `dir` naming the tiny model folder `modelDir` as svc-1.13.0 (svc-latest): its path. */
export function tinyRegistryFile(dir: string, modelDir: string): string {
  const registry = join(dir, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-1.13.0',
      models: { 'svc-1.13.0': { path: modelDir, description: 'tiny', release_date: '2026-11-22' } },
      aliases: { 'svc-latest': 'svc-1.13.0' },
    }),
  );
  return registry;
}

// `assay serve` as a user starts it (bin/assay.js over dist/, built by npm test first): started with
// a registry and flags, waited on until it logs "ready", stopped; its stdout (the log) comes back.
import { spawn } from 'node:child_process';
import { expect } from 'vitest';

export async function serveLog(registry: string, flags: string[] = [], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(
    process.execPath,
    ['bin/assay.js', 'serve', '--port', '0', '--threads', '1', '--registry', registry, ...flags],
    { env: { ...env, ASSAY_API_KEYS: 'log-key' }, stdio: ['ignore', 'pipe', 'pipe'] },
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

// `assay serve` as a child process for the benches: a registry for one model folder, a free port,
// ready when /healthz answers, stopped with SIGTERM (SIGKILL after 30 s), its memory from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../deploy/local/cluster.js';
import { round } from './stats.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface BenchServer {
  proc: ChildProcess;
  url: string;
  /** The versioned id the registry serves the folder as. */
  model: string;
  stop(): Promise<void>;
  memory(): { vmHwmMiB: number; vmRssMiB: number };
}

export interface BenchServerOptions {
  modelDir: string;
  variant?: string;
  threads: number;
  key: string;
  /** The versioned id (default bench-model) and its aliases. */
  model?: string;
  aliases?: Record<string, string>;
  /** More `assay serve` flags. */
  args?: string[];
  /** Another checkout's server (its bin/ and dist/), for before/after comparisons. */
  repo?: string;
}

export async function startBenchServer(o: BenchServerOptions): Promise<BenchServer> {
  const tmp = mkdtempSync(join(tmpdir(), 'assay-bench-'));
  const registry = join(tmp, 'registry.json');
  const model = o.model ?? 'bench-model';
  const entry = {
    path: o.modelDir,
    ...(o.variant ? { variant: o.variant } : {}),
    description: 'bench (synthetic)',
    release_date: '2026-01-01',
  };
  writeFileSync(registry, JSON.stringify({ default: model, models: { [model]: entry }, aliases: o.aliases ?? {} }));
  const port = await freePort();
  const args = [
    'bin/assay.js',
    'serve',
    '--port',
    String(port),
    '--registry',
    registry,
    '--threads',
    String(o.threads),
    '--log-level',
    'warn',
    ...(o.args ?? []),
  ];
  const proc = spawn(process.execPath, args, {
    cwd: o.repo ?? ROOT,
    env: { ...process.env, ASSAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'assay-bench-data-')), ASSAY_API_KEYS: o.key },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}: ${stderr}`);
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`server not ready in 180 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const memory = () => {
    const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
    const kib = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    return { vmHwmMiB: round(kib('VmHWM') / 1024, 1), vmRssMiB: round(kib('VmRSS') / 1024, 1) };
  };
  const stop = async () => {
    if (proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(tmp, { recursive: true, force: true });
  };
  return { proc, url, model, stop, memory };
}

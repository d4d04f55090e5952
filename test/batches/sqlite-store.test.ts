// The embedded batch store beyond the shared contract (store.test.ts): a process killed with
// kill -9 loses no acknowledged write; a dead store thread is reported and started again; a data
// directory that cannot be written fails at open, naming the path.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteBatchStore } from '../../src/service/batches/index.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'assay-batches-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('SQLite batch store', () => {
  it('keeps every write acknowledged before the process was killed with kill -9', async () => {
    const dir = tempDir();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures/sqlite-writer.ts'), dir, '40'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
    for (let i = 0; (out.match(/acked/g) ?? []).length < 25; i++) {
      if (child.exitCode !== null) throw new Error(`the writer exited: ${err}`);
      expect(i).toBeLessThan(600);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const acked = new Set([...out.matchAll(/acked (\d+)/g)].map((m) => Number(m[1])));
    expect(acked.size).toBeGreaterThanOrEqual(25);

    const store = await openSqliteStore({ dataDir: dir });
    try {
      const batch = await store.get('o', 'batch_kill');
      expect(batch).toMatchObject({ status: 'in_progress', total: 40 });
      const page = await store.results('o', 'batch_kill', { limit: 100 });
      const answered = page!.lines.map((l) => Number(/c(\d+)/.exec(l)![1]));
      for (const line of acked) expect(answered).toContain(line);
      expect(new Set(answered).size).toBe(answered.length);
      expect(batch!.completed).toBe(answered.length);
      // The lines not yet answered are claimable again.
      const claim = await store.claim('r', { maxItems: 100, leaseMs: 1000, now: Date.now() });
      expect(claim!.items.every((i) => !answered.includes(i.line))).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('reports a dead store thread and starts it again on the next call', async () => {
    const deaths: Error[] = [];
    const store: SqliteBatchStore = await openSqliteStore({ dataDir: tempDir(), onExit: (e) => deaths.push(e) });
    try {
      await store.create({ id: 'b', owner: 'o', createdAt: 1, expiresAt: 2 });
      expect(store.healthy()).toBe(true);
      // The thread dies (as a native crash or an out-of-memory kill would end it).
      await (store as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
      await new Promise((r) => setTimeout(r, 50));
      expect(store.healthy()).toBe(false);
      expect(deaths).toHaveLength(1);
      expect(deaths[0]!.message).toMatch(/batch store thread exited/);
      expect(await store.get('o', 'b')).toMatchObject({ id: 'b', status: 'validating' });
      expect(store.healthy()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('serves a data directory from one store at a time', async () => {
    const dataDir = tempDir();
    const first = await openSqliteStore({ dataDir });
    try {
      await first.create({ id: 'b', owner: 'o', createdAt: 1, expiresAt: 2 });
      await expect(openSqliteStore({ dataDir })).rejects.toThrow(
        /database is locked \(another process serves this data directory\)/,
      );
    } finally {
      await first.close();
    }
    const again = await openSqliteStore({ dataDir });
    expect(await again.get('o', 'b')).toMatchObject({ id: 'b' });
    await again.close();
  });

  it('fails at open, naming the path, when the data directory cannot be written', async () => {
    const file = join(tempDir(), 'not-a-dir');
    writeFileSync(file, 'x');
    const dataDir = join(file, 'batches');
    await expect(openSqliteStore({ dataDir })).rejects.toThrow(
      `the batch store's data directory ${dataDir} is not writable`,
    );
    // Read-only for this user (root writes anywhere: there the check needs a read-only mount).
    if (process.getuid?.() !== 0) {
      const ro = tempDir();
      const { chmodSync } = await import('node:fs');
      chmodSync(ro, 0o555);
      await expect(openSqliteStore({ dataDir: ro })).rejects.toThrow(ro);
      chmodSync(ro, 0o755);
    }
  });
});

// A memory cgroup under a test's control, for running a process under a memory limit below the
// machine's, as a container runs it: cgroup v2 (memory.max) where the memory controller is on the
// unified hierarchy, else cgroup v1 (memory.limit_in_bytes), the child made under the test
// process's own cgroup. Needs write access to the cgroup file system (root, not read-only);
// `memoryCgroupMissing()` says why not where it cannot be made, and the tests that need one skip.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  version: 1 | 2;
  dir: string;
  limit: number;
  /** The command line run inside the cgroup (a shell that moves itself in, then execs it). */
  via(argv: string[]): [string, string[]];
  /** Processes the kernel's OOM killer ended in it. */
  oomKills(): number;
  /** The most memory it held, bytes (page cache included). */
  peak(): number;
  remove(): void;
}

/** Where a cgroup file system is mounted, by type (cgroup2) or v1 controller (memory). */
function mounts(): { v2?: string; v1memory?: string } {
  const out: { v2?: string; v1memory?: string } = {};
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4]!;
    const [type, , options = ''] = right.split(' ');
    if (type === 'cgroup2') out.v2 ??= mountPoint;
    if (type === 'cgroup' && options.split(',').includes('memory')) out.v1memory ??= mountPoint;
  }
  return out;
}

/** This process's cgroup path in the v2 hierarchy ('0::/…') or the v1 memory one ('N:memory:/…'). */
function ownPath(version: 1 | 2): string {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (version === 2 && controllers === '' && path !== undefined) return path;
    if (version === 1 && controllers?.split(',').includes('memory') && path !== undefined) return path;
  }
  return '/';
}

function make(limit: number): MemoryCgroup {
  const m = mounts();
  const name = `assay-test-${process.pid}-${Date.now()}`;
  const v2root = m.v2 && join(m.v2, ownPath(2));
  if (
    v2root &&
    readFileSync(join(v2root, 'cgroup.controllers'), 'utf8')
      .split(' ')
      .map((c) => c.trim())
      .includes('memory')
  ) {
    // Children of this cgroup get the memory controller (it must be on in its subtree_control).
    writeFileSync(join(v2root, 'cgroup.subtree_control'), '+memory');
    const dir = join(v2root, name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'memory.max'), String(limit));
    writeFileSync(join(dir, 'memory.swap.max'), '0');
    const events = () => readFileSync(join(dir, 'memory.events'), 'utf8');
    return cgroup(
      2,
      dir,
      limit,
      () => Number(/oom_kill (\d+)/.exec(events())?.[1] ?? 0),
      () =>
        Number(
          readFileSync(join(dir, existsSync(join(dir, 'memory.peak')) ? 'memory.peak' : 'memory.current'), 'utf8'),
        ),
    );
  }
  if (!m.v1memory) throw new Error('no cgroup v2 memory controller and no cgroup v1 memory hierarchy is mounted');
  const dir = join(m.v1memory, ownPath(1), name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limit));
  if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
    writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(limit));
  const control = () => readFileSync(join(dir, 'memory.oom_control'), 'utf8');
  return cgroup(
    1,
    dir,
    limit,
    () => Number(/oom_kill (\d+)/.exec(control())?.[1] ?? 0),
    () => Number(readFileSync(join(dir, 'memory.max_usage_in_bytes'), 'utf8')),
  );
}

function cgroup(version: 1 | 2, dir: string, limit: number, oomKills: () => number, peak: () => number): MemoryCgroup {
  return {
    version,
    dir,
    limit,
    via: (argv) => ['sh', ['-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$@"`, 'sh', ...argv]],
    oomKills,
    peak,
    remove() {
      // Processes still in it (a test that failed) are killed first: an occupied cgroup cannot be removed.
      const pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone already
        }
      }
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(dir);
          return;
        } catch {
          execFileSync('sleep', ['0.1']);
        }
      }
    },
  };
}

/** A memory cgroup limited to `limit` bytes. */
export function memoryCgroup(limit: number): MemoryCgroup {
  return make(limit);
}

/** Why a memory cgroup cannot be made here (a trial one, removed at once), or undefined when it can. */
export function memoryCgroupMissing(): string | undefined {
  try {
    make(512 * 1024 * 1024).remove();
    return undefined;
  } catch (e) {
    return `a memory cgroup cannot be made here: ${(e as Error).message.split('\n')[0]}`;
  }
}

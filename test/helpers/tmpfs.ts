// A small file system under a test's control: a tmpfs of a given size mounted on a fresh directory
// (needs root, or CAP_SYS_ADMIN: CI runs as root). Filling it up is a real full disk: writes fail
// with ENOSPC, SQLite's with SQLITE_FULL. Where mounting is not allowed, `mountTmpfs` says why and
// the tests that need it skip, naming the reason.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  dir: string;
  /** Writes a file until the file system is full (ENOSPC): its path. */
  fill(name?: string): string;
  unmount(): void;
}

/** Why a tmpfs cannot be mounted here, or undefined when it can (a trial mount, at once unmounted). */
export function tmpfsMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  try {
    mountTmpfs(1024 * 1024).unmount();
    return undefined;
  } catch (e) {
    return `mount -t tmpfs failed: ${(e as Error).message.split('\n')[0]}`;
  }
}

export function mountTmpfs(bytes: number): Tmpfs {
  const dir = mkdtempSync(join(tmpdir(), 'assay-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  return {
    dir,
    fill(name = 'filler') {
      const file = join(dir, name);
      const fd = openSync(file, 'a');
      const chunk = Buffer.alloc(64 * 1024, 0x2e);
      try {
        for (let piece = chunk; ;) {
          try {
            writeSync(fd, piece);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
            if (piece.length === 1) break;
            piece = piece.subarray(0, Math.ceil(piece.length / 2)); // down to the last byte
          }
        }
      } finally {
        closeSync(fd);
      }
      return file;
    },
    unmount() {
      execFileSync('umount', ['-l', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

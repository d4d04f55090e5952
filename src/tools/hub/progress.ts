// A one-line progress bar for downloads. On a terminal it redraws in place; elsewhere (CI logs,
// pipes) it prints a line at most every 10% so logs stay readable.
import { formatBytes, type FetchProgress } from './fetch.js';

export interface ProgressBar {
  update(p: FetchProgress): void;
  /** Ends the line (call before printing anything else). */
  done(): void;
}

export function progressBar(out: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr, width = 30): ProgressBar {
  const tty = Boolean(out.isTTY);
  const started = Date.now();
  let lastDraw = 0;
  let lastDecile = -1;
  let drawn = false;

  const render = (p: FetchProgress): string => {
    const frac = p.totalBytes > 0 ? Math.min(1, p.doneBytes / p.totalBytes) : 1;
    const filled = Math.round(frac * width);
    const secs = (Date.now() - started) / 1000;
    const rate = secs > 0 ? `${formatBytes(Math.round(p.doneBytes / secs))}/s` : '';
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(frac * 100).toFixed(1).padStart(5)}% ${formatBytes(p.doneBytes)} / ${formatBytes(p.totalBytes)} ${rate} ${p.file}`;
  };

  return {
    update(p) {
      const now = Date.now();
      if (tty) {
        if (now - lastDraw < 100 && p.doneBytes < p.totalBytes) return;
        lastDraw = now;
        out.write(`\r${render(p)}\x1b[K`);
        drawn = true;
      } else {
        const decile = p.totalBytes > 0 ? Math.floor((10 * p.doneBytes) / p.totalBytes) : 10;
        if (decile === lastDecile) return;
        lastDecile = decile;
        out.write(`${render(p)}\n`);
      }
    },
    done() {
      if (tty && drawn) out.write('\n');
      drawn = false;
    },
  };
}

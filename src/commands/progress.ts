// A one-line progress bar (model downloads, dataset runs). On a terminal it redraws in place;
// elsewhere (CI logs, pipes) it prints a line at most every 10% so logs stay readable.

export interface ProgressBar {
  /** `done` of `total` units; `text` describes them (e.g. "12 MiB / 40 MiB 3 MiB/s file.onnx"). */
  update(done: number, total: number, text: (seconds: number) => string): void;
  /** Ends the line (call before printing anything else). */
  done(): void;
}

export function progressBar(
  out: { write(text: string): unknown; isTTY?: boolean } = process.stderr,
  width = 30,
): ProgressBar {
  const tty = Boolean(out.isTTY);
  const started = Date.now();
  let lastDraw = 0;
  let lastDecile = -1;
  let drawn = false;

  const render = (done: number, total: number, text: (seconds: number) => string): string => {
    const frac = total > 0 ? Math.min(1, done / total) : 1;
    const filled = Math.round(frac * width);
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(frac * 100).toFixed(1).padStart(5)}% ${text((Date.now() - started) / 1000)}`;
  };

  return {
    update(done, total, text) {
      const now = Date.now();
      if (tty) {
        if (now - lastDraw < 100 && done < total) return;
        lastDraw = now;
        out.write(`\r${render(done, total, text)}\x1b[K`);
        drawn = true;
      } else {
        const decile = total > 0 ? Math.floor((10 * done) / total) : 10;
        if (decile === lastDecile) return;
        lastDecile = decile;
        out.write(`${render(done, total, text)}\n`);
      }
    },
    done() {
      if (tty && drawn) out.write('\n');
      drawn = false;
    },
  };
}

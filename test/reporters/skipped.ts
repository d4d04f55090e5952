// Ends a run by naming what it skipped and how to run it, so a machine without Chromium, nginx or
// the other CPU class does not pass silently with fewer tests. CI installs all of it (.ci/run).
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/** What a skipped suite needs, by the folder its file is in; the first match wins. */
const NEEDS: Array<[RegExp, string]> = [
  [/^test\/browser\//, 'Chromium: apt-get install -y --no-install-recommends chromium'],
  [/^test\/deploy\//, 'nginx: apt-get install -y --no-install-recommends nginx-light'],
  [/^test\/numerics\//, 'the other CPU class: apt-get install -y qemu-user && npm run test:numerics:avx2'],
  [/^test\/faults\/postgres/, 'PostgreSQL: apt-get install -y --no-install-recommends postgresql'],
  [
    /^test\/faults\/(disk-full|memory-limit)/,
    'root (mount -t tmpfs, a memory cgroup): run the suite as root, as CI does',
  ],
];

export default class SkippedReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows: string[] = [];
    const needs = new Set<string>();
    for (const m of modules) {
      const skipped = [...m.children.allTests('skipped')].length;
      if (skipped === 0) continue;
      const file = relative(process.cwd(), m.moduleId);
      const need = NEEDS.find(([re]) => re.test(file))?.[1];
      if (need) needs.add(need);
      rows.push(`  ${file}: ${skipped} skipped${need ? ` (needs ${need.split(':')[0]})` : ''}`);
    }
    if (rows.length === 0) return;
    const lines = ['', 'Skipped in this run:', ...rows];
    if (needs.size > 0)
      lines.push(
        'To run them, install what they need (CI does):',
        ...[...needs].map((n) => `  ${n.slice(n.indexOf(':') + 2)}`),
      );
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

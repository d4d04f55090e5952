// The slowest test files of a run, from vitest's JSON report: `npm run test:slowest` after `npm test`
// (it writes .test-results.json), or `node test/slowest.mjs FILE.json [N]` for another report (the
// emulated AVX2 run's, .ci/run keeps both). The suite's time budget is in CONTRIBUTING.md.
import { readFileSync } from 'node:fs';

const [file = '.test-results.json', count = '15'] = process.argv.slice(2);
const report = JSON.parse(readFileSync(file, 'utf8'));
const rows = report.testResults
  .map((t) => ({
    file: t.name.slice(t.name.lastIndexOf('/test/') + 1),
    s: (t.endTime - t.startTime) / 1000,
    n: t.assertionResults.length,
  }))
  .sort((a, b) => b.s - a.s);
const total = rows.reduce((t, r) => t + r.s, 0);
const wall = (Math.max(...report.testResults.map((t) => t.endTime)) - report.startTime) / 1000;
console.log(
  `${file}: ${rows.length} files, ${report.numTotalTests} tests, ${total.toFixed(0)} s in files, ${wall.toFixed(0)} s wall`,
);
for (const r of rows.slice(0, Number(count)))
  console.log(
    `${r.s.toFixed(1).padStart(8)} s  ${((100 * r.s) / total).toFixed(1).padStart(5)}%  ${r.file} (${r.n} tests)`,
  );

// A risk–coverage curve as a standalone SVG: keeping the answers with certainty ≥ a threshold, the
// share kept (x) against the error rate of those kept (y), one step per distinct certainty; the
// error budgets as dashed lines and, on each, the point the coverage report picks. Opens in any
// browser; the data it draws is report.json's `coverage`.
import type { CoverageAtBudget, RiskPoint } from './coverage.js';
import { escapeHtml as esc } from '../common/index.js';

export function riskCoverageSvg(title: string, curve: RiskPoint[], atBudget: CoverageAtBudget[]): string {
  const size = 360;
  const pad = 48;
  const plot = size - 2 * pad;
  // The error axis up to the larger of the worst risk and the budgets, rounded up to a tenth.
  const top = Math.max(
    0.1,
    Math.ceil(10 * Math.max(...curve.map((p) => p.risk), ...atBudget.map((b) => b.budget))) / 10,
  );
  const x = (v: number) => pad + v * plot;
  const y = (v: number) => size - pad - (v / top) * plot;
  const xTicks = [0, 0.25, 0.5, 0.75, 1];
  const yTicks = [0, top / 2, top];
  const line = curve.map((p) => `${x(p.coverage).toFixed(1)},${y(p.risk).toFixed(1)}`).join(' ');
  const start = curve.length ? `${x(0).toFixed(1)},${y(curve[0]!.risk).toFixed(1)} ` : '';
  const budgets = atBudget.flatMap((b) => [
    `<line x1="${x(0)}" y1="${y(b.budget).toFixed(1)}" x2="${x(1)}" y2="${y(b.budget).toFixed(1)}" stroke="#b45309" stroke-dasharray="4 3"/>`,
    `<text x="${x(1) - 4}" y="${(y(b.budget) - 4).toFixed(1)}" text-anchor="end" fill="#b45309">budget ${+(b.budget * 100).toFixed(2)}%</text>`,
    b.kept > 0
      ? `<circle cx="${x(b.coverage).toFixed(1)}" cy="${y(b.risk).toFixed(1)}" r="5" ` +
        `fill="#b45309"><title>coverage ${b.coverage.toFixed(3)} at threshold ` +
        `${b.threshold?.toFixed(3)} (${b.kept} kept, ${b.errors} wrong)</title></circle>`
      : '',
    // The chosen point said in words too (a printed or embedded SVG has no tooltip).
    b.kept > 0
      ? `<text x="${(x(b.coverage) + (b.coverage > 0.5 ? -8 : 8)).toFixed(1)}" ` +
        `y="${(y(b.risk) - 8).toFixed(1)}" text-anchor="${b.coverage > 0.5 ? 'end' : 'start'}" ` +
        `fill="#b45309">${b.coverage.toFixed(2)} kept at ≥ ${b.threshold?.toFixed(3)}</text>`
      : `<text x="${x(0) + 4}" y="${(y(b.budget) - 4).toFixed(1)}" fill="#b45309">none kept within ${+(b.budget * 100).toFixed(2)}%</text>`,
  ]);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}" font-family="sans-serif" font-size="11">`,
    `<rect width="${size}" height="${size}" fill="white"/>`,
    `<text x="${size / 2}" y="20" text-anchor="middle" font-size="13">${esc(title)}</text>`,
    `<rect x="${pad}" y="${pad}" width="${plot}" height="${plot}" fill="none" stroke="#999"/>`,
    ...xTicks.map((t) => `<text x="${x(t)}" y="${size - pad + 14}" text-anchor="middle">${t}</text>`),
    ...yTicks.map((t) => `<text x="${pad - 6}" y="${y(t) + 4}" text-anchor="end">${+t.toFixed(3)}</text>`),
    line ? `<polyline points="${start}${line}" fill="none" stroke="#2563eb" stroke-width="2"/>` : '',
    ...budgets,
    `<text x="${size / 2}" y="${size - 12}" text-anchor="middle">coverage (share of answers kept)</text>`,
    `<text x="14" y="${size / 2}" text-anchor="middle" transform="rotate(-90 14 ${size / 2})">error rate of the kept answers</text>`,
    '</svg>',
    '',
  ].join('\n');
}

// A reliability diagram as a standalone SVG: mean confidence per equal-mass bin (x) against the
// share of those answers that were right (y), the diagonal of perfect calibration, and each bin's
// count as the dot's area. Opens in any browser; the data it draws is report.json's `reliability`.
import type { ReliabilityBin } from './metrics.js';
import { escapeHtml as esc } from '../common/index.js';

export function reliabilitySvg(title: string, bins: ReliabilityBin[], ece: number): string {
  const size = 360;
  const pad = 48;
  const plot = size - 2 * pad;
  const x = (v: number) => pad + v * plot;
  const y = (v: number) => size - pad - v * plot;
  const most = Math.max(1, ...bins.map((b) => b.count));
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const dots = bins
    .filter((b) => b.count > 0)
    .map(
      (b) =>
        `<circle cx="${x(b.confidence).toFixed(1)}" cy="${y(b.accuracy).toFixed(1)}" ` +
        `r="${(3 + 7 * Math.sqrt(b.count / most)).toFixed(1)}" fill="#2563eb" ` +
        `fill-opacity="0.7"><title>confidence ${b.confidence.toFixed(3)}, accuracy ` +
        `${b.accuracy.toFixed(3)}, ${b.count} answers</title></circle>`,
    );
  const line = bins
    .filter((b) => b.count > 0)
    .map((b) => `${x(b.confidence).toFixed(1)},${y(b.accuracy).toFixed(1)}`)
    .join(' ');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}" font-family="sans-serif" font-size="11">`,
    `<rect width="${size}" height="${size}" fill="white"/>`,
    `<text x="${size / 2}" y="20" text-anchor="middle" font-size="13">${esc(title)} (ECE ${Number.isFinite(ece) ? ece.toFixed(3) : '–'})</text>`,
    `<rect x="${pad}" y="${pad}" width="${plot}" height="${plot}" fill="none" stroke="#999"/>`,
    ...ticks.flatMap((t) => [
      `<text x="${x(t)}" y="${size - pad + 14}" text-anchor="middle">${t}</text>`,
      `<text x="${pad - 6}" y="${y(t) + 4}" text-anchor="end">${t}</text>`,
    ]),
    `<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" stroke="#aaa" stroke-dasharray="4 3"/>`,
    line ? `<polyline points="${line}" fill="none" stroke="#2563eb"/>` : '',
    ...dots,
    `<text x="${size / 2}" y="${size - 12}" text-anchor="middle">predicted confidence</text>`,
    `<text x="14" y="${size / 2}" text-anchor="middle" transform="rotate(-90 14 ${size / 2})">observed accuracy</text>`,
    '</svg>',
    '',
  ].join('\n');
}

// report.html of `assay eval --dataset … --out DIR`: the report as one self-contained page (no
// script, no external file: the styles inline, the reliability diagrams as inline SVG), to open
// offline and share. With --compare, the differences with their bootstrap intervals and the answers
// that flipped come right after the arms' summaries, before the long per-tag tables.
import { escapeHtml } from '../../common/index.js';

export interface HtmlTable {
  head: string[];
  rows: string[][];
}

export interface HtmlArm {
  arm: string;
  /** The formula of its choice and score confidence; null: the server's own (its --confidence), unknown here. */
  confidence: 'entropy' | 'hosted' | null;
  summary: string;
  metrics: HtmlTable;
  /** Coverage at each error budget: caption (with the thresholds), table, and the note on how many answers are enough. */
  coverage: Array<{ caption: string; table: HtmlTable; note: string }>;
  byTag: Array<{ tag: string; table: HtmlTable }>;
  /** An escalating model: accuracy against escalation rate over a sweep of thresholds. */
  escalation?: { intro: string; head: string[]; rows: string[][]; note: string };
  /** Reliability diagrams: their titles and SVG text. */
  plots: Array<{ title: string; svg: string }>;
}

export interface ChangedAnswer {
  line: number;
  question: string;
  type: string;
  expected: string;
  a: string;
  b: string;
  verdict: 'fixed' | 'broken' | '';
}

export interface HtmlCompare {
  a: string;
  b: string;
  /** Differences B − A with their paired bootstrap intervals, and how they were computed. */
  drift: HtmlTable;
  driftNote: string;
  flips: HtmlTable;
  changed: ChangedAnswer[];
}

const esc = escapeHtml;

function table(t: HtmlTable, caption?: string): string {
  return [
    '<table>',
    caption ? `<caption>${esc(caption)}</caption>` : '',
    `<thead><tr>${t.head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead>`,
    `<tbody>${t.rows.map((r) => `<tr>${r.map((c, i) => (i === 0 ? `<th scope="row">${esc(c)}</th>` : `<td>${esc(c)}</td>`)).join('')}</tr>`).join('')}</tbody>`,
    '</table>',
  ].join('');
}

const STYLE = `body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:0 auto;max-width:1100px;padding:1rem}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem}
.synthetic{border:2px solid #b45309;background:#fff7ed;color:#7c2d12;padding:.6rem .8rem;border-radius:6px}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-variant-numeric:tabular-nums;display:block;overflow-x:auto}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid #d0d4da;padding:.3rem .6rem;text-align:right}th[scope=row],thead th{text-align:left;background:#f6f7f9}
.plots{display:flex;flex-wrap:wrap;gap:1rem}.plots figure{margin:0}.plots svg{max-width:100%;height:auto}
p.note{font-size:.85rem;color:#555}td.fixed{color:#0b7a3e;font-weight:600}td.broken{color:#b3261e;font-weight:600}`;

/** An arm's summary: metrics, coverage at the budgets, the reliability and risk–coverage plots. */
function armSummary(arm: HtmlArm, heading: boolean): string {
  return [
    heading ? `<h2>${esc(arm.arm)}</h2>` : '',
    `<p>${esc(arm.summary)}</p>`,
    table(arm.metrics, 'All answers'),
    ...arm.coverage.map((c) => `${table(c.table, c.caption)}<p class="note">${esc(c.note)}</p>`),
    arm.plots.length
      ? `<div class="plots">${arm.plots.map((p) => `<figure aria-label="${esc(p.title)}">${p.svg}</figure>`).join('')}</div>`
      : '',
    arm.escalation
      ? `<h2>Escalation: accuracy against escalation rate</h2><p>${esc(arm.escalation.intro)}</p>${table(arm.escalation, 'Per threshold')}${arm.escalation.note ? `<p>${esc(arm.escalation.note)}</p>` : ''}`
      : '',
  ].join('\n');
}

/** An arm's per-tag tables: long, so last. */
function armTags(arm: HtmlArm, heading: boolean): string {
  if (!arm.byTag.length) return '';
  return [
    heading ? `<h2>${esc(arm.arm)} per tag</h2>` : '',
    ...arm.byTag.map((t) => table(t.table, `tag ${t.tag}`)),
  ].join('\n');
}

function changedTable(c: HtmlCompare): string {
  if (c.changed.length === 0) return `<p>No answer flipped between ${esc(c.a)} and ${esc(c.b)}.</p>`;
  const head = ['line', 'question', 'type', 'label', c.a, c.b, 'verdict'];
  const rows = c.changed.map(
    (x) =>
      `<tr><th scope="row">${x.line}</th><td>${esc(x.question)}</td><td>${esc(x.type)}</td><td>${esc(x.expected)}</td><td>${esc(x.a)}</td><td>${esc(x.b)}</td><td class="${x.verdict}">${x.verdict || '–'}</td></tr>`,
  );
  return `<table class="changed"><caption>Answers that flipped (${c.changed.length})</caption><thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

const FORMULAS = {
  entropy: 'entropy, 1 − H/ln N over every outcome (<code>assay serve --confidence entropy</code>, the default)',
  hosted:
    "the hosted service's formulas, (p<sub>max</sub> − 1/k)/(1 − 1/k) for a choice and 1 − " +
    'distance from the most probable level for a score (<code>assay serve --confidence ' +
    'hosted</code>)',
  server:
    'as the server computes it: its <code>--confidence</code>, entropy (1 − H/ln N) unless it ' +
    'was started with <code>--confidence hosted</code>; the API does not report which',
} as const;

/** Which formula the choice and score confidence (and so coverage and calibration) comes from, per arm when they differ. */
function confidenceLine(arms: HtmlArm[]): string {
  const of = (a: HtmlArm) => FORMULAS[a.confidence ?? 'server'];
  if (arms.every((a) => of(a) === of(arms[0]!)))
    return `<p class="confidence">Choice and score confidence: ${of(arms[0]!)}.</p>`;
  return `<p class="confidence">Choice and score confidence: ${arms.map((a) => `${esc(a.arm)}: ${of(a)}`).join('; ')}.</p>`;
}

/** The whole page. */
export function reportHtml(title: string, synthetic: boolean, arms: HtmlArm[], compare?: HtmlCompare): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${esc(title)}</h1>
${
  synthetic
    ? '<p class="synthetic" role="alert"><strong>This model is synthetic (random weights): its ' +
      'answers, and so these metrics, mean nothing.</strong> Register a real model to measure ' +
      'quality.</p>'
    : ''
}
${arms.length ? confidenceLine(arms) : ''}
${arms.map((a) => armSummary(a, arms.length > 1)).join('\n')}
${compare ? `<h2>${esc(compare.b)} against ${esc(compare.a)}</h2>\n<p>${esc(compare.driftNote)}</p>\n${table(compare.drift, 'Differences with 95% intervals')}\n${table(compare.flips)}\n${changedTable(compare)}` : ''}
${arms.map((a) => armTags(a, arms.length > 1)).join('\n')}
</body>
</html>
`;
}

// `assay serve --help` and the README's configuration table, generated from the settings schema.
import { settingsInfo, type SettingInfo } from './settings.js';

function flagOf(s: SettingInfo): string {
  if (!s.flag) return '';
  if (!s.boolean) return `--${s.flag} ${s.arg}`;
  return s.shown === 'true' ? `--no-${s.flag}` : `--${s.flag}`;
}

function docOf(s: SettingInfo): string {
  const def =
    s.shown === undefined
      ? ''
      : s.boolean
        ? ` (default ${s.shown === 'true' ? 'on' : 'off'})`
        : ` (default ${s.shown})`;
  return `${s.doc}${def}`;
}

/** Text wrapped to `width` columns, every line after the first indented by `indent`. */
function wrap(text: string, width: number, indent: number): string {
  const words = text.split(' ');
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + 1 + w.length > width) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

export function serveHelp(): string {
  // Three columns: flag (30), environment variable (28), meaning (wrapped); a long flag takes a line of its own.
  const rows = settingsInfo().map((s) => {
    const flag = flagOf(s);
    const rest = `${(s.env ?? '').padEnd(28)}${wrap(docOf(s), 62, 60)}`;
    return flag.length > 29 ? `  ${flag}\n${' '.repeat(32)}${rest}` : `  ${flag.padEnd(30)}${rest}`;
  });
  return `Usage: assay serve [options]

Serves the question-evaluation API (POST /v1/systemone, GET /v1/models, GET /openapi.json,
GET /healthz, GET /metrics). Every option can also be set by the environment variable shown;
a flag wins over the environment. An invalid value stops the server at startup.

${rows.join('\n')}
  -h, --help                    this text

With no key configured, a key is generated for this run and printed once.
SIGTERM / SIGINT: stop accepting, finish in-flight requests, exit 0.`;
}

/** The README's configuration table (markdown). */
export function configTable(): string {
  const esc = (s: string) => s.replaceAll('|', '\\|');
  const rows = settingsInfo().map(
    (s) =>
      `| ${s.flag ? `\`${esc(flagOf(s))}\`` : '—'} | ${s.env ? `\`${s.env}\`` : '—'} | ` +
      `${s.shown === undefined ? '—' : esc(s.boolean ? (s.shown === 'true' ? 'on' : 'off') : s.shown)} ` +
      `| ${esc(s.doc)} |`,
  );
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

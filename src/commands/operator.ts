// assay ps | load MODEL | unload MODEL | reload  [--url URL] [--key KEY]   (an operator key)
//
// The operator endpoints of a running server (src/api/routes/admin.ts): what is resident, one line
// per model with its size, last use and expiry; load and unload by hand; reload the registry.
import type { ResidencyView, ResidentModel } from '../service/index.js';
import { DEFAULT_BASE_URL } from '../client/index.js';
import { commandFlags, COMMON_FLAGS } from '../config/index.js';
import { NO_KEY, parseCommand, parseFormat, resolveIo, serverTarget, table, type CommandIo } from './common.js';

/** load, unload and reload print the server's JSON answer (there is no table of it: no --format). */
const flags = {
  url: COMMON_FLAGS.url('the running server', DEFAULT_BASE_URL),
  key: COMMON_FLAGS.key('an operator key'),
};
/** ps: a table for a person (the default), or the server's JSON (GET /admin/models). */
const PS_FORMAT = 'table';

const SPECS = {
  ps: commandFlags({
    head: `Usage: assay ps [--url URL] [--key KEY] [--format table|json]

The models resident in a running server (GET /admin/models), one line each: name, size (RSS growth
over its load plus its prefix cache), last use, when it unloads if still idle, requests in flight.
`,
    flags: { ...flags, format: COMMON_FLAGS.format(PS_FORMAT) },
    column: 16,
  }),
  load: commandFlags({
    head: `Usage: assay load MODEL [--url URL] [--key KEY]

Loads a model on a running server (POST /admin/models/load), making room as a request would.
`,
    flags,
    column: 16,
    positionals: true,
  }),
  unload: commandFlags({
    head: `Usage: assay unload MODEL [--url URL] [--key KEY]

Unloads an idle model from a running server (POST /admin/models/unload); refused (409) while requests use it.
`,
    flags,
    column: 16,
    positionals: true,
  }),
  reload: commandFlags({
    head: `Usage: assay reload [--url URL] [--key KEY]

Makes a running server read its registry file again (POST /admin/registry/reload; SIGHUP does the
same): added models load on first use, removed and re-pointed ones unload once their requests end.
A bad file is refused with the file, the path in it and what was expected; the models stay as they were.
`,
    flags,
    column: 16,
  }),
};

type Name = keyof typeof SPECS;

/** "12.3 MiB" */
function size(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** How long ago / from now, as a person reads it ("4 seconds ago", "in 5 minutes"). */
function relative(iso: string | null, now: number, none: string): string {
  if (iso === null) return none;
  const s = Math.round((Date.parse(iso) - now) / 1000);
  const a = Math.abs(s);
  const [n, unit] =
    a < 120 ? [a, 'second'] : a < 7200 ? [Math.round(a / 60), 'minute'] : [Math.round(a / 3600), 'hour'];
  const text = `${n} ${unit}${n === 1 ? '' : 's'}`;
  return s < 0 ? `${text} ago` : `in ${text}`;
}

export function psTable(view: ResidencyView, now = Date.now()): string {
  const expiry = (m: ResidentModel) =>
    m.state === 'loading'
      ? 'loading'
      : m.pinned || view.keep_alive_ms < 0
        ? 'Forever'
        : m.in_flight + m.queued > 0
          ? 'in use'
          : relative(m.expires_at, now, 'now');
  const rows = [['NAME', 'FAMILY', 'SIZE', 'LAST USED', 'UNTIL', 'IN FLIGHT', 'LOAD']];
  for (const m of view.models)
    rows.push([
      m.model,
      m.family ?? '-',
      size(m.size_bytes),
      relative(m.last_used, now, '-'),
      expiry(m),
      String(m.in_flight),
      m.load_ms === null ? '-' : `${(m.load_ms / 1000).toFixed(2)} s`,
    ]);
  const budget = Number.isFinite(view.memory_budget_bytes) ? size(view.memory_budget_bytes) : 'none';
  return `${table(rows)}\n\n${view.models.length} of ${view.max_loaded_models} models, ${size(view.resident_bytes)} of ${budget}`;
}

async function call(key: string, url: string, method: 'GET' | 'POST', path: string, body?: object): Promise<unknown> {
  const res = await fetch(`${url.replace(/\/+$/, '')}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => ({}))) as { detail?: unknown };
  if (!res.ok) {
    const detail = typeof json.detail === 'string' ? json.detail : JSON.stringify(json.detail ?? res.statusText);
    throw new Error(`${res.status}: ${detail}`);
  }
  return json;
}

async function runOne(name: Name, argv: string[], ioOptions?: CommandIo): Promise<number> {
  const io = resolveIo(ioOptions);
  const parsed = parseCommand(name, SPECS[name], argv, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const format = name === 'ps' ? parseFormat((values as { format?: string }).format, PS_FORMAT) : 'json';
  const wantsModel = name === 'load' || name === 'unload';
  const { url = DEFAULT_BASE_URL, key } = serverTarget(values, io.env);
  if (!format || positionals.length !== (wantsModel ? 1 : 0)) {
    io.err(`assay ${name}: ${SPECS[name].head.split('\n')[0]}\n`);
    return 2;
  }
  if (!key) {
    io.err(`assay ${name}: ${NO_KEY} (an operator key)\n`);
    return 2;
  }
  try {
    const out =
      name === 'ps'
        ? await call(key, url, 'GET', '/admin/models')
        : name === 'reload'
          ? await call(key, url, 'POST', '/admin/registry/reload', {})
          : await call(key, url, 'POST', `/admin/models/${name}`, { model: positionals[0] });
    io.out(`${name === 'ps' && format === 'table' ? psTable(out as ResidencyView) : JSON.stringify(out, null, 2)}\n`);
    return 0;
  } catch (e) {
    io.err(`assay ${name}: ${(e as Error).message}\n`);
    return 1;
  }
}

export const ps = (argv: string[], io?: CommandIo) => runOne('ps', argv, io);
export const load = (argv: string[], io?: CommandIo) => runOne('load', argv, io);
export const unload = (argv: string[], io?: CommandIo) => runOne('unload', argv, io);
export const reload = (argv: string[], io?: CommandIo) => runOne('reload', argv, io);

// Which `Host` and `Origin` a request may carry: the guard against DNS rebinding (a hostile name
// resolved to 127.0.0.1 sends its own name as Host) and against pages of other origins. Pure; the
// settings validate the lists with it and the API's origin checks (api/plugins/origins.ts) apply it.
//
// A Host passes when it is an IP literal (a browser sends one only to a page loaded from that very
// address: no name for an attacker to re-point), `localhost` or `*.localhost` (never resolved
// through DNS), the machine's own name, or a name of the allowlist (`--allowed-hosts`: exact names
// or `*.suffix`). An empty, missing or malformed Host never passes.
import { isIP } from 'node:net';
import { hostname } from 'node:os';

/** 'any': no Host check (a non-loopback bind without --allowed-hosts, or `*` in it). */
export type AllowedHosts = readonly string[] | 'any';

/** `host[:port]`, the name lower-cased and without a trailing dot; undefined when malformed. */
export function parseHost(header: string | undefined): { name: string; port?: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]@/\\\s]+)(?::(\d{1,5}))?$/.exec(header ?? '');
  if (!m) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  let name = m[1]!.toLowerCase();
  if (name.startsWith('[')) {
    if (isIP(name.slice(1, -1)) !== 6) return undefined;
  } else {
    if (name.endsWith('.')) name = name.slice(0, -1);
    if (!/^[a-z0-9_.-]+$/.test(name) || name === '' || name.startsWith('.')) return undefined;
  }
  return port === undefined ? { name } : { name, port };
}

/** Whether `name` matches an allowlist entry: the same name, or `*.suffix` and a name ending in `.suffix`. */
function matches(name: string, entry: string): boolean {
  const e = entry.toLowerCase().replace(/\.$/, '');
  return e.startsWith('*.') ? name.endsWith(e.slice(1)) && name.length > e.length - 1 : name === e;
}

/** The names every server accepts besides the allowlist. */
const ALWAYS = ['localhost', '*.localhost'];

/** Whether a request's Host header passes (see the file's head). */
export function hostAllowed(header: string | undefined, allowed: AllowedHosts): boolean {
  if (allowed === 'any') return true;
  const host = parseHost(header);
  if (!host) return false;
  const bare = host.name.startsWith('[') ? host.name.slice(1, -1) : host.name;
  if (isIP(bare)) return true;
  return [...ALWAYS, hostname(), ...allowed].some((entry) => matches(host.name, entry));
}

/** Whether a listen address is a loopback one (the Host check is on by default there). */
export function isLoopback(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  return a === 'localhost' || a === '::1' || (isIP(a) === 4 && a.startsWith('127.'));
}

/** Whether `entry` can stand in --allowed-hosts: `*`, a name, `*.suffix`, or an IP literal. */
export function validHostEntry(entry: string): boolean {
  if (entry === '*') return true;
  const name = entry.startsWith('*.') ? entry.slice(2) : entry;
  return isIP(name.replace(/^\[|\]$/g, '')) !== 0 || /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/i.test(name);
}

/** The Host check a server gets: `--allowed-hosts` when set (`*` turns it off), else the defaults on a loopback bind, else none. */
export function hostPolicy(bind: string, allowedHosts: readonly string[] | undefined): AllowedHosts {
  if (allowedHosts?.includes('*')) return 'any';
  if (allowedHosts?.length) return allowedHosts;
  return isLoopback(bind) ? [] : 'any';
}

/** An origin as `scheme://host[:port]` (the URL parser's form), or undefined when `text` is none. */
export function normalOrigin(text: string): string | undefined {
  try {
    const url = new URL(text);
    if (!/^https?:$/.test(url.protocol) || url.username || url.password) return undefined;
    if (url.pathname !== '/' || url.search || url.hash) return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

/**
 * Whether a request with this `Origin` may be answered: same origin as the Host it was sent to (the
 * playground, /docs), or an origin of the CORS allowlist (`*`: any). No Origin: not a browser's
 * cross-origin request, nothing to check.
 */
export function originAllowed(
  origin: string | undefined,
  host: string | undefined,
  corsOrigins: readonly string[],
): boolean {
  if (origin === undefined) return true;
  if (corsOrigins.includes('*')) return true;
  const normal = normalOrigin(origin);
  if (normal === undefined) return false;
  return sameOrigin(normal, host) || corsOrigins.includes(normal);
}

/** Whether an origin names the host a request was sent to (the scheme's default port where either leaves it out). */
function sameOrigin(origin: string, header: string | undefined): boolean {
  const host = parseHost(header);
  if (!host) return false;
  const url = new URL(origin);
  const defaultPort = url.protocol === 'https:' ? 443 : 80;
  return url.hostname === host.name && Number(url.port || defaultPort) === (host.port ?? defaultPort);
}

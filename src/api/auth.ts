// Bearer-key authentication. Keys are held only as SHA-256 hashes and compared in constant time.
//
// Keys file (--keys-file), JSON; it never stores a key, only its hash:
//   {"keys": [{"name": "team-a", "sha256": "<64 hex>", "models": ["svc-latest"],
//              "requests_per_minute": 600, "input_tokens_per_second": 100000}]}
// `models` (optional) lists the names the key may send (alias or versioned id; allowing a
// versioned id allows every alias of it); the limits are optional and default to the server's.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface ApiKey {
  /** A label for logs and metrics (never the key itself). */
  name: string;
  /** SHA-256 of the key. */
  hash: Buffer;
  /** Names the key may use; undefined = every model. */
  models?: string[];
  requestsPerMinute?: number;
  inputTokensPerSecond?: number;
}

export function sha256(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** A fresh random key, `sk-assay-` + 43 base64url characters (256 bits). */
export function generateKey(): string {
  return `sk-assay-${randomBytes(32).toString('base64url')}`;
}

/** ASSAY_API_KEYS: comma-separated plain keys, each allowed every model and the default limits. */
export function keysFromList(list: string): ApiKey[] {
  return list
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k, i) => ({ name: `env-${i + 1}`, hash: sha256(k) }));
}

const HEX64 = /^[0-9a-f]{64}$/i;

function positive(v: unknown, what: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new Error(`${what} must be a positive number`);
  return v;
}

export function parseKeysFile(text: string, file = 'keys file'): ApiKey[] {
  const data = JSON.parse(text) as { keys?: unknown };
  if (!data || !Array.isArray(data.keys)) throw new Error(`${file}: expected {"keys": [...]}`);
  return data.keys.map((raw, i) => {
    const k = raw as Record<string, unknown>;
    const where = `${file}: keys[${i}]`;
    if (typeof k.sha256 !== 'string' || !HEX64.test(k.sha256)) throw new Error(`${where}.sha256 must be 64 hex digits`);
    if (k.models !== undefined && !(Array.isArray(k.models) && k.models.every((m) => typeof m === 'string'))) {
      throw new Error(`${where}.models must be an array of model names`);
    }
    return {
      name: typeof k.name === 'string' && k.name ? k.name : `key-${i + 1}`,
      hash: Buffer.from(k.sha256, 'hex'),
      models: k.models as string[] | undefined,
      requestsPerMinute: positive(k.requests_per_minute, `${where}.requests_per_minute`),
      inputTokensPerSecond: positive(k.input_tokens_per_second, `${where}.input_tokens_per_second`),
    };
  });
}

export function loadKeysFile(file: string): ApiKey[] {
  return parseKeysFile(readFileSync(file, 'utf8'), file);
}

/**
 * Throws when a key's `models` names a model the registry does not accept: such a key could use
 * nothing (403 on everything), so the server refuses it at startup, naming the key and the names.
 */
export function checkKeyModels(keys: readonly ApiKey[], accepted: readonly string[]): void {
  const known = new Set(accepted);
  const problems = keys.flatMap((k) => {
    const unknown = (k.models ?? []).filter((m) => !known.has(m));
    return unknown.length ? [`key "${k.name}" names ${unknown.map((m) => `"${m}"`).join(', ')}`] : [];
  });
  if (problems.length)
    throw new Error(`keys file: ${problems.join('; ')}: not in the model registry (it accepts ${accepted.join(', ')})`);
}

/** Finds the key a request presented. Every stored hash is compared (no early exit), in constant time. */
export class KeyStore {
  constructor(readonly keys: readonly ApiKey[]) {}

  /** The key of an `Authorization: Bearer <key>` header, or undefined for a missing / unknown key. */
  authenticate(header: string | undefined): ApiKey | undefined {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
    if (!m) return undefined;
    const presented = sha256(m[1]!);
    let found: ApiKey | undefined;
    for (const k of this.keys) {
      if (timingSafeEqual(presented, k.hash) && !found) found = k;
    }
    return found;
  }
}

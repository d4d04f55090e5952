// Bearer-key authentication. Keys are held only as SHA-256 hashes and compared in constant time.
//
// Keys file (--keys-file), JSON; it never stores a key, only its hash:
//   {"keys": [{"name": "team-a", "sha256": "<64 hex>", "models": ["svc-latest"],
//              "requests_per_minute": 600, "input_tokens_per_second": 100000}]}
// `models` (optional) lists the names the key may send (alias or versioned id; allowing a
// versioned id allows every alias of it); the limits are optional and default to the server's.
// Checked by KeysFileSchema: a problem stops the server naming the file, the path and what was expected.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { fileProblem } from '../protocol/index.js';

export interface ApiKey {
  /** A label for logs and metrics (never the key itself). */
  name: string;
  /** SHA-256 of the key. */
  hash: Buffer;
  /** Names the key may use; undefined = every model. */
  models?: string[];
  requestsPerMinute?: number;
  inputTokensPerSecond?: number;
  /** May use the operator endpoints (/admin/...: the resident models, load, unload, registry reload). */
  operator?: boolean;
}

export function sha256(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** A fresh random key, `sk-assay-` + 43 base64url characters (256 bits). */
export function generateKey(): string {
  return `sk-assay-${randomBytes(32).toString('base64url')}`;
}

/**
 * ASSAY_API_KEYS: comma-separated plain keys, each allowed every model and the default limits. With
 * `firstIsOperator` (no keys file), the first key is the operator's too.
 */
export function keysFromList(list: string, firstIsOperator = false): ApiKey[] {
  return list
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k, i) => ({
      name: `env-${i + 1}`,
      hash: sha256(k),
      ...(firstIsOperator && i === 0 ? { operator: true } : {}),
    }));
}

/** One key of the keys file. Unknown fields are refused: a misspelt `models` would allow every model. */
const KeyEntrySchema = z.strictObject({
  name: z.string().min(1).optional().describe('A label for logs and metrics (default key-1, key-2, … by position).'),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/i, "expected the key's SHA-256 as 64 hex digits")
    .describe('SHA-256 of the key, hex (`printf %s "$KEY" | sha256sum`); the key itself is never stored.'),
  models: z
    .array(z.string().min(1), 'expected an array of model names')
    .optional()
    .describe(
      'Names the key may send (alias or versioned id; a versioned id allows its aliases too); absent: every model. A name the registry lacks stops the server.',
    ),
  requests_per_minute: z
    .number()
    .positive()
    .finite()
    .optional()
    .describe("The key's request rate limit (default: the server's --requests-per-minute)."),
  input_tokens_per_second: z
    .number()
    .positive()
    .finite()
    .optional()
    .describe("The key's input-token rate limit (default: the server's --input-tokens-per-second)."),
  operator: z
    .boolean('expected true or false')
    .optional()
    .describe(
      'true: the key may also use the operator endpoints (/admin/...: resident models, load, unload, registry reload; `assay ps`). Default false: an ordinary caller never can.',
    ),
});

/** The keys file (--keys-file). */
export const KeysFileSchema = z.strictObject({ keys: z.array(KeyEntrySchema).describe('The accepted keys.') });

export function parseKeysFile(text: string, file = 'keys file'): ApiKey[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message})`, { cause: e });
  }
  const parsed = KeysFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(fileProblem(file, parsed.error));
  return parsed.data.keys.map((k, i) => ({
    name: k.name ?? `key-${i + 1}`,
    hash: Buffer.from(k.sha256, 'hex'),
    models: k.models,
    requestsPerMinute: k.requests_per_minute,
    inputTokensPerSecond: k.input_tokens_per_second,
    ...(k.operator ? { operator: true } : {}),
  }));
}

export function loadKeysFile(file: string): ApiKey[] {
  return parseKeysFile(readFileSync(file, 'utf8'), file);
}

/**
 * Throws when a key's `models` names a model the registry does not accept: such a key could use
 * nothing (403 on everything), so the server refuses it at startup, naming the key and the names.
 */
export function checkKeyModels(
  keys: readonly ApiKey[],
  accepted: readonly string[],
  files: { keysFile: string; registryFile: string },
): void {
  const known = new Set(accepted);
  const problems = keys.flatMap((k) => {
    const unknown = (k.models ?? []).filter((m) => !known.has(m));
    return unknown.length ? [`key "${k.name}" names ${unknown.map((m) => `"${m}"`).join(', ')}`] : [];
  });
  if (problems.length)
    throw new Error(
      `${files.keysFile}: ${problems.join('; ')}: not in the model registry (${files.registryFile} accepts ${accepted.join(', ')})`,
    );
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

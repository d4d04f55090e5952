// What a registry reload changes: the versioned ids added, removed, and re-pointed (same id, another
// folder, variant or rewrite), and the default. The pool unloads the removed and re-pointed ones
// once their requests are done; the added ones load on first use.
import type { LogPolicy } from '../protocol/index.js';
import type { Registry } from '../registry/index.js';

export interface RegistryChange {
  added: string[];
  removed: string[];
  /** Same id, another folder, variant or rewrite: its next request loads the new one. */
  changed: string[];
  default: string;
}

/** The change from `before` to `next`; `source` names what an id loads (undefined: an escalating entry). */
export function registryChange(
  before: Registry,
  next: Registry,
  source: (id: string, r: Registry) => string | undefined,
): RegistryChange {
  const was = Object.keys(before.models);
  const is = Object.keys(next.models);
  return {
    added: is.filter((id) => !was.includes(id)),
    removed: was.filter((id) => !is.includes(id)),
    changed: is.filter((id) => was.includes(id) && source(id, before) !== source(id, next)),
    default: next.default,
  };
}

/**
 * A registry reload refused: the file, the path in it and what was expected (or a key the new
 * registry leaves without its models). The running set stays as it was. → 422 to the operator.
 */
export class RegistryRefusedError extends Error {
  static readonly code = 'registry_refused';
  static readonly log: LogPolicy = 'message';

  constructor(message: string) {
    super(`Registry not reloaded (the models stay as they were): ${message}`);
    this.name = 'RegistryRefusedError';
  }
}

// State-affine routing: requests may carry the hex sha256 of their state's JSON (JSON.stringify) in
// x-assay-state-hash, so an ingress routes one state to the replica that holds its prefix
// (docs/scale-out.md). The client SDK and the benches compute it here; the browser pages compute
// the same digest with WebCrypto (src/web).
import { createHash } from 'node:crypto';

/** The header that carries a request's state hash. */
export const STATE_HASH_HEADER = 'x-assay-state-hash';

/** The hex sha256 of `state`'s JSON. */
export function stateHash(state: unknown): string {
  return createHash('sha256').update(JSON.stringify(state)).digest('hex');
}

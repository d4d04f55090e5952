// The wire contract, below every layer: zod schemas, validation with pydantic-shaped errors, the protocol's refusals, request bodies as bytes.
// The layer's one entry: code outside src/protocol/ imports it only from here (eslint).
export * from './body.js';
export * from './depth.js';
export * from './errors.js';
export * from './file-problem.js';
export * from './order.js';
export * from './pydantic/json-decode.js';
export * from './retry-after.js';
export * from './schemas.js';
export * from './state-hash.js';
export * from './validate.js';

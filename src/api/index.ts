// The HTTP API: buildServer (Fastify routes, admission, limits, error mapping) and API keys.
// The layer's one entry: code outside src/api/ imports it only from here (eslint).
export * from './auth.js';
export * from './server.js';
export { errorResponse } from './error-table.js';

// `assay serve` settings: the schema, loading flags and environment, the generated docs.
// The layer's one entry: code outside src/config/ imports it only from here (eslint).
export * from './docs.js';
export * from './flags.js';
export * from './load.js';
export * from './settings.js';

// What the CLI writes models with: the synthetic generator, its dtype and export flavors, the hub fetcher.
// The layer's one entry: code outside src/model-files/ imports it only from here (eslint).
export * from './variants.js';
export * from './hub/fetch.js';
export * from './synth/index.js';

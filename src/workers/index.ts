// Worker threads: how they start (one compiled or one shared TypeScript entry). The layer's one entry.
export * from './start.js';
export * from './channel.js';
export * from './pool.js';
export * from './on-demand.js';
export * from './priority.js';

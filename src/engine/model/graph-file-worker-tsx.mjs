// The graph-rewrite worker when running from TypeScript sources: register tsx, then load it.
import { register } from 'tsx/esm/api';

register();
await import('./graph-file-worker.ts');

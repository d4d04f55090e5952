// The engine thread when running from TypeScript sources: register tsx, then load it.
import { register } from 'tsx/esm/api';

register();
await import('./engine-thread-worker.ts');

// The deep-body worker when running from TypeScript sources (vitest): register tsx, then load it.
import { register } from 'tsx/esm/api';

register();
await import('./deep-body-worker.ts');

// The planner worker when running from TypeScript sources (npm start, vitest): worker threads do
// not inherit the main thread's tsx registration, so register it here, then load the worker.
import { register } from 'tsx/esm/api';

register();
const worker = await import('./worker.ts');
export default worker.default;

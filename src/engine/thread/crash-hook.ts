// A test hook, not part of the engine thread's protocol: with ASSAY_ENGINE_CRASH_HOOK=1 in the
// environment the thread starts with (tests that kill it and the engine-death bench set it), the
// thread listens for one message outside its channel and dies on it, as a crash would: it exits,
// or throws an error nothing catches. A thread started without it never listens.
import { parentPort } from 'node:worker_threads';

/** The environment variable that installs the hook in engine threads started while it is '1'. */
export const CRASH_HOOK_ENV = 'ASSAY_ENGINE_CRASH_HOOK';

/** How the thread is made to die. */
export type CrashHow = 'exit' | 'throw';

/** The hook's message (sent outside the channel, never for a caller). */
export type CrashMessage = { type: 'crash'; how: CrashHow };

export function crashHookEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[CRASH_HOOK_ENV] === '1';
}

/** In the engine thread: dies on a crash message. */
export function installCrashHook(): void {
  parentPort!.on('message', (m: CrashMessage | { type?: undefined }) => {
    if (m.type !== 'crash') return;
    if (m.how === 'exit') process.exit(70);
    setImmediate(() => {
      throw new Error('crash requested by a test');
    });
  });
}

// The startup notice of escalating registry entries: which local model they escalate to, and a loud
// warning for a remote one (zero data retention does not hold for what it is sent). Apart from
// escalation.ts, which imports the pool's error: the pool announces at creation.
import type { Registry } from '../registry/index.js';
import type { PoolLog } from './provider.js';

/**
 * At startup: each escalating entry, and loudly the ones whose second model is remote: the
 * escalated questions (with their state) leave this server, so zero data retention does not hold
 * for them.
 */
export function announceEscalations(registry: Registry, log: PoolLog, env: NodeJS.ProcessEnv = process.env): void {
  for (const [id, entry] of Object.entries(registry.models)) {
    const spec = entry.escalate;
    if (!spec) continue;
    if (typeof spec.second === 'string') {
      log.info(
        { model: id, first: spec.first, second: spec.second, below: spec.below },
        'escalating model: uncertain questions go to a second local model',
      );
      continue;
    }
    log.warn(
      { model: id, first: spec.first, second_url: spec.second.url, second_model: spec.second.model, below: spec.below },
      'ESCALATING TO A REMOTE MODEL: the questions this model escalates, with their state, are ' +
        'sent to that endpoint; zero data retention does not hold for them',
    );
    if (spec.second.api_key_env && !env[spec.second.api_key_env]) {
      log.warn(
        { model: id, api_key_env: spec.second.api_key_env },
        'the remote model API key variable is not set: escalations will fail',
      );
    }
  }
}

// The request the peers bench sends on every run: a ~1,000-token state and 16 mixed questions that
// repeat (three kinds, each four or more times). It once answered 500 on every int8 model
// (tiny-tasks-1 included) after stems landed: one pass read more positions than it had tokens and
// onnxruntime refused the buffer it had planned. Here `assay serve` runs the shipped registry as
// `npm start` does (`assay models synth` first), and every model of it answers the request over a
// real socket with 200, each answer as the same question asked alone: within 1e-6 on an int8 model
// (a question answers the same to the bit in any pass: docs/engine.md "Exactness across passes"),
// within the packed bound 1e-5 on fp32 (passes of other shapes sum in other orders).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SystemOneResponse } from '../../src/protocol/schemas.js';
import { startServe, type ServeProcess } from '../serve-process.js';

const KEY = 'repeat-key';
const BODY = JSON.parse(readFileSync('test/api/fixtures/repeated-questions.json', 'utf8')) as {
  state: string;
  questions: Record<string, unknown>;
};
const REGISTRY = JSON.parse(readFileSync('models/registry.json', 'utf8')) as {
  models: Record<string, { variant?: string; escalate?: unknown }>;
};
/** The bound of each model of the shipped registry: int8 to the bit, fp32 (and a cascade holding one) the packed bound. */
const bound = (name: string) => (REGISTRY.models[name]!.variant === 'int8' ? 1e-6 : 1e-5);

let server: ServeProcess;
beforeAll(async () => {
  execFileSync(process.execPath, ['bin/assay.js', 'models', 'synth'], { stdio: 'ignore' });
  server = await startServe('models/registry.json', [], { ASSAY_API_KEYS: KEY });
}, 300_000);
afterAll(async () => {
  await server?.stop();
});

async function ask(model: string, questions: Record<string, unknown>) {
  const res = await fetch(`${server.base}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ state: BODY.state, model, questions }),
  });
  return { status: res.status, body: (await res.json()) as SystemOneResponse };
}

function numbers(a: SystemOneResponse['answers'][string]): number[] {
  return a.type === 'noul' ? [a.noul] : Object.values(a.probabilities);
}

describe('16 mixed questions with repeats on a ~1,000-token state', () => {
  it.each(Object.keys(REGISTRY.models))(
    '%s answers 200, each answer as the question alone',
    async (model) => {
      const all = await ask(model, BODY.questions);
      expect(all.status, JSON.stringify(all.body)).toBe(200);
      expect(Object.keys(all.body.answers).sort()).toEqual(Object.keys(BODY.questions).sort());
      const alone = new Map<string, SystemOneResponse['answers'][string]>();
      for (const [key, question] of Object.entries(BODY.questions)) {
        const id = JSON.stringify(question);
        if (!alone.has(id)) {
          const one = await ask(model, { [key]: question });
          expect(one.status).toBe(200);
          alone.set(id, one.body.answers[key]!);
        }
        const expected = numbers(alone.get(id)!);
        numbers(all.body.answers[key]!).forEach((p, i) =>
          expect(Math.abs(p - expected[i]!), `${model} ${key}`).toBeLessThanOrEqual(bound(model)),
        );
      }
    },
    120_000,
  );
});

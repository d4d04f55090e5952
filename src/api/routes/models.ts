// GET /v1/models: the names the calling key may send, with description and release date.
import type { FastifyInstance } from 'fastify';
import { admission, keyAllows } from '../admission.js';
import { ModelMetadataListSchema } from '../../protocol/index.js';
import { listModels } from '../../registry/index.js';

export async function modelsRoute(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  app.get('/v1/models', { onRequest: admission(ctx) }, async (req) => {
    const key = req.apiKey!;
    const models = listModels(ctx.registry, (name, id) => keyAllows(key, name, id)).map((m) => m.metadata);
    return ModelMetadataListSchema.parse({ models });
  });
}

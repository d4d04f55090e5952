// assay models [--url URL] [--registry FILE] [--format json|table]
// assay models fetch <owner/name> [...]   (models-fetch.ts)
// assay models synth [...]                (models-synth.ts)
//
// Lists the model names: a running server's GET /v1/models (--url), or what a local registry
// would list, with the versioned id and folder each name resolves to.
import type { ModelMetadataList } from '../protocol/index.js';
import { AssayClient } from '../client/index.js';
import { listModels, loadRegistry } from '../registry/index.js';
import { DEFAULT_FAMILY, detectFamily, familyNamed } from '../engine/index.js';
import type { ResolvedModel } from '../registry/index.js';
import { commandFlags, COMMON_FLAGS } from '../config/index.js';
import {
  describeError,
  NO_KEY,
  parseCommand,
  parseFormat,
  resolveIo,
  serverTarget,
  table,
  type CommandIo,
} from './common.js';

const FLAGS = commandFlags({
  head: `Usage: assay models [options]

Lists the models a server lists (GET /v1/models): its aliases and the versioned ids the registry
marks "listed", each a name the \`model\` field accepts (as is every versioned id of the registry).
`,
  flags: {
    url: COMMON_FLAGS.url('ask a running server (GET /v1/models)', 'the local registry'),
    key: COMMON_FLAGS.key(),
    registry: COMMON_FLAGS.registry('without --url: the registry to read'),
    format: COMMON_FLAGS.format('json'),
  },
  column: 20,
  tail: `  assay models fetch <owner/name> [...]   download a Hugging Face ONNX export and register it
                                          (assay models fetch --help)
  assay models synth [...]                write the synthetic models the registry declares, or
                                          one shape (assay models synth --help)

Without --url the list is what the server would list for a key allowed every model, and the
table also shows the versioned id and folder behind each name and the model family it is (the
registry's \`family\`, else what its folder's files show; docs/models.md#model-families).`,
});

export async function run(argv: string[], ioOptions?: CommandIo): Promise<number> {
  const io = resolveIo(ioOptions);
  // Loaded on demand: listing models never loads the hub client or the generator.
  if (argv[0] === 'fetch') {
    const fetchCli = await import('./models-fetch.js');
    return fetchCli.run(argv.slice(1), { env: io.env, stdout: ioOptions?.stdout, stderr: ioOptions?.stderr });
  }
  if (argv[0] === 'synth') {
    let synth: typeof import('./models-synth.js');
    try {
      synth = await import('./models-synth.js');
    } catch (e) {
      io.err(
        `assay models synth: the synthetic model generator is not in this build (the production image leaves it out): ${(e as Error).message}\n`,
      );
      return 1;
    }
    return synth.run(argv.slice(1), ioOptions);
  }
  const parsed = parseCommand('models', FLAGS, argv, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const format = parseFormat(values.format, 'json');
  const { url, key } = serverTarget(values, io.env);
  const wrong = !format ? `--format must be json or table, not "${values.format}"` : url && !key ? NO_KEY : undefined;
  if (wrong) {
    io.err(`assay models: ${wrong}\n`);
    return 2;
  }

  let list: ModelMetadataList;
  const resolvesTo = new Map<string, string>();
  const families = new Map<string, string>();
  try {
    if (url) {
      list = await new AssayClient({ baseUrl: url, apiKey: key }).listModels();
    } else {
      const models = listModels(loadRegistry(parsed.registry));
      list = { models: models.map((m) => m.metadata) };
      for (const { metadata, resolved } of models) {
        resolvesTo.set(metadata.name, `${resolved.id} (${resolved.dir})`);
        families.set(metadata.name, familyOf(resolved));
      }
    }
  } catch (e) {
    io.err(`assay models: ${describeError(e)}\n`);
    return 1;
  }

  if (format === 'json') {
    io.out(`${JSON.stringify(list, null, 2)}\n`);
    return 0;
  }
  const local = resolvesTo.size > 0;
  const rows = [['NAME', 'RELEASED', ...(local ? ['RESOLVES TO', 'FAMILY'] : []), 'DESCRIPTION']];
  for (const m of list.models)
    rows.push([
      m.name,
      m.release_date,
      ...(local ? [resolvesTo.get(m.name)!, families.get(m.name)!] : []),
      m.description,
    ]);
  io.out(`${table(rows)}\n`);
  return 0;
}

/**
 * The family a name's model is: the registry's `family`, else what its folder's files show (the
 * engine's rules), with what the folder says of itself (its family's `describe`: a contract's
 * name); an escalating entry is `escalating`, a synthetic model not yet written the default family
 * (the generator writes decoders), a folder that matches none `unknown`.
 */
function familyOf(resolved: ResolvedModel): string {
  const { entry } = resolved;
  if (entry.escalate) return 'escalating';
  try {
    const family = entry.family ?? detectFamily(resolved.dir);
    // A folder may say which model of its family it is (a prompt contract's name).
    const which = familyNamed(family)?.describe?.(resolved.dir);
    return which ? `${family} (${which})` : family;
  } catch {
    return entry.synthetic ? DEFAULT_FAMILY : 'unknown';
  }
}

// The commands' flags: one declaration gives both the parser and the --help text, and the
// settings a command shares with `assay serve` (the registry) resolve as serve resolves them.
import { describe, expect, it } from 'vitest';
import { run as modelsCmd } from '../../src/commands/models.js';
import { parseCommand, resolveIo } from '../../src/commands/common.js';
import { commandFlags, commandHelp, COMMON_FLAGS } from '../../src/config/index.js';
import { DEFAULT_REGISTRY_FILE } from '../../src/registry/registry.js';
import { serveConfig } from '../../src/commands/serve.js';

const SPEC = commandFlags({
  head: 'Usage: assay demo [options]\n',
  flags: {
    registry: COMMON_FLAGS.registry('registry to read'),
    tag: { arg: 'T', multiple: true, doc: 'a tag;\nrepeatable' },
    force: { doc: 'do it' },
  },
  column: 20,
  tail: 'Done.',
});

function capture(env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io = { ...resolveIo({ env }), out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
  return { io, out, err };
}

describe('command flags', () => {
  it('the help lists every declared flag, aligned, with the shared registry default', () => {
    expect(commandHelp(SPEC)).toBe(
      [
        'Usage: assay demo [options]',
        '',
        '  --registry FILE   registry to read (default ASSAY_REGISTRY or models/registry.json)',
        '  --tag T           a tag;',
        '                    repeatable',
        '  --force           do it',
        '  -h, --help        this text',
        '',
        'Done.',
      ].join('\n'),
    );
  });

  it('parses what the help lists and refuses the rest (exit 2 with the help)', () => {
    const c = capture();
    const p = parseCommand('demo', SPEC, ['--tag', 'a', '--tag', 'b', '--force'], c.io);
    if (typeof p === 'number') throw new Error(`exit ${p}`);
    expect(p.values).toEqual({ tag: ['a', 'b'], force: true });
    expect(parseCommand('demo', SPEC, ['--bogus'], c.io)).toBe(2);
    expect(c.err.join('')).toContain("Unknown option '--bogus'");
    expect(c.err.join('')).toContain('  --tag T');
    expect(parseCommand('demo', SPEC, ['-h'], c.io)).toBe(0);
    expect(c.out.join('')).toBe(`${commandHelp(SPEC)}\n`);
  });

  it('the registry resolves as serve resolves it: --registry, else ASSAY_REGISTRY (empty = unset), else the package', () => {
    const registryOf = (argv: string[], env: Record<string, string>) => {
      const p = parseCommand('demo', SPEC, argv, capture(env).io);
      if (typeof p === 'number') throw new Error(`exit ${p}`);
      const s = serveConfig(argv, env);
      if (s === 'help') throw new Error('help');
      expect(s.registryFile).toBe(p.registry);
      return p.registry;
    };
    expect(registryOf([], {})).toBe(DEFAULT_REGISTRY_FILE);
    expect(registryOf([], { ASSAY_REGISTRY: '' })).toBe(DEFAULT_REGISTRY_FILE);
    expect(registryOf([], { ASSAY_REGISTRY: '/env/registry.json' })).toBe('/env/registry.json');
    expect(registryOf(['--registry', '/flag.json'], { ASSAY_REGISTRY: '/env/registry.json' })).toBe('/flag.json');
    const c = capture();
    expect(parseCommand('demo', SPEC, ['--registry', ''], c.io)).toBe(2);
    expect(c.err.join('')).toBe('assay demo: --registry must not be empty\n');
  });

  it('assay models reads the registry ASSAY_REGISTRY names', async () => {
    const c = { out: [] as string[], err: [] as string[] };
    const stream = (to: string[]) => ({ write: (t: string) => to.push(t) }) as unknown as NodeJS.WritableStream;
    const code = await modelsCmd([], {
      env: { ASSAY_REGISTRY: '/nonexistent/registry.json' },
      stdout: stream(c.out),
      stderr: stream(c.err),
    });
    expect(code).toBe(1);
    expect(c.err.join('')).toContain('/nonexistent/registry.json');
  });
});

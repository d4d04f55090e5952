// Lint: typescript-eslint with type information, on src/, test/ and bench/ (npm run lint; CI runs it
// before the tests). Besides the recommended rules: promises must be awaited or handled, never
// passed where a callback's result is ignored, and a switch over a union must cover every member.
// The layer rules keep imports flowing one way (docs/architecture.md).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Imports a layer may not make: lower layers never import upper ones. */
const LAYERS = {
  'src/common/**': [
    '**/workers/**',
    '**/protocol/**',
    '**/engine/**',
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
    '**/quality/**',
    '**/registry/**',
    '**/defaults.js',
  ],
  'src/workers/**': [
    '**/protocol/**',
    '**/engine/**',
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
    '**/quality/**',
  ],
  'src/protocol/**': [
    '**/engine/**',
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
  ],
  'src/engine/**': [
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
    '**/registry/**',
  ],
  'src/service/**': ['**/api/**', '**/commands/**', '**/tools/**', '**/model-files/**', '**/client/**', '**/config/**'],
  'src/api/**': ['**/commands/**', '**/tools/**', '**/model-files/**', '**/client/**', '**/config/**'],
  'src/client/**': [
    '**/engine/**',
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/config/**',
  ],
  'src/quality/**': [
    '**/engine/**',
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
  ],
  'src/model-files/**': ['**/tools/**', '**/service/**', '**/api/**', '**/commands/**', '**/client/**'],
  // The registry names models and their folders: above the engine (it checks a family's name), below the service.
  'src/registry/**': [
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
    '**/mcp/**',
  ],
  // The MCP tools see answers only through their backend (the service, a client or the route).
  'src/mcp/**': [
    '**/engine/**',
    '**/service/**',
    '**/api/**',
    '**/commands/**',
    '**/tools/**',
    '**/model-files/**',
    '**/client/**',
    '**/config/**',
    '**/registry/**',
  ],
};

/** Every layer has one entry file (index.ts): code outside it may import only that (src/commands, the top, has none). */
const ENTRIES = [
  'common',
  'workers',
  'protocol',
  'engine',
  'service',
  'api',
  'client',
  'quality',
  'config',
  'model-files',
  'mcp',
  'registry',
];

/** src/internal.ts: the one door through which bench/, tools/ and deploy/ reach inner parts (never used inside src/). */
const DOOR = {
  group: ['**/internal.js'],
  message:
    'src/internal.ts is the door for bench/, tools/ and deploy/ only: inside src/, import a layer through its index.ts',
};

/** The entry rules for files of `layer` (a LAYERS key, or '' for files in no layer): all but its own. */
function entryRules(layer) {
  return [
    ...ENTRIES.filter((e) => !layer.startsWith(`src/${e}/`)).map((e) => ({
      group: [`**/${e}/**`, `!**/${e}/index.js`],
      message: `outside src/${e}/, import it only through src/${e}/index.ts`,
    })),
    DOOR,
  ];
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'models/generated/', 'models/hub/', 'coverage/', '.test-output/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  // Tests read response bodies of any shape.
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
  // Every source file outside a layer with an entry reaches that layer only through its index.ts.
  { files: ['src/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: entryRules('') }] } },
  ...Object.entries(LAYERS).map(([files, patterns]) => ({
    files: [files.replace('/**', '/**/*.ts')],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: patterns, message: 'lower layers never import upper ones (docs/architecture.md)' },
            ...entryRules(files),
          ],
        },
      ],
    },
  })),
  // The door itself re-exports inner parts of the layers, and only it may.
  { files: ['src/internal.ts'], rules: { 'no-restricted-imports': 'off' } },
  // Benches, tools and the deploy scripts reach src/ only through the door (src/internal.ts).
  {
    files: ['bench/**/*.ts', 'tools/**/*.ts', 'deploy/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/src/**', '!**/src/internal.js'],
              message: 'bench/, tools/ and deploy/ import src/ only through src/internal.ts (add what you need there)',
            },
          ],
        },
      ],
    },
  },
  // Plain JavaScript (the worker bootstraps, bin/, this file): linted without type information.
  { files: ['**/*.mjs', '**/*.js'], ...tseslint.configs.disableTypeChecked },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);

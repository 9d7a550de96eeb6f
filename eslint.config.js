// ESLint with typescript-eslint's type-aware rules; formatting is Prettier's (eslint-config-prettier
// turns off every rule it would fight). Decision: docs/decisions/0020-formatter-and-linter.md
import js from '@eslint/js'
import prettier from 'eslint-config-prettier'
import globals from 'globals'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'bench/results/', 'clients/typescript/schema.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's test()/describe() return promises the runner itself awaits
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unsafe-type-assertion': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // a test or benchmark walks parsed responses (light-my-request's json() is `any` itself); what it
    // assumes of them is checked by the assertions that follow
    files: ['test/**', 'bench/**', 'src/**/*.test.ts'],
    rules: { '@typescript-eslint/no-unsafe-type-assertion': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // the web app (web/src) runs in the browser; its service worker in a worker scope
    files: ['web/src/**'],
    languageOptions: { globals: { ...globals.browser } },
    // no type assertions at all (`as const` aside): DOM events are typed by preact, parsed JSON is narrowed
    // with guards (isRecord, textOf, isOneOf in core.ts), bodies and filters use the generated client's types
    rules: { '@typescript-eslint/consistent-type-assertions': ['error', { assertionStyle: 'never' }] },
  },
  {
    files: ['web/public/sw.js'],
    languageOptions: { globals: { ...globals.serviceworker } },
  },
  {
    // browser tests drive pages; what they read back is checked by the assertions that follow
    files: ['web/test/**'],
    rules: { '@typescript-eslint/no-unsafe-type-assertion': 'off' },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
  prettier,
)

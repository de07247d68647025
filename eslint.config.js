// Lint rules that catch what the compiler does not: typescript-eslint's type-checked recommended
// set (an `any` flowing into typed code, promises nobody awaits, an `async` with nothing to wait
// for, assertions that assert nothing) over product code and tests alike, plus the rules below.
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['node_modules/**', '.tap/**', 'dist/**', 'deploy/**', 'tests/**/snapshots/**'] },
  {
    files: ['hooks/**/*.ts', 'tests/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // tap queues subtests itself; `t.test(...)` at the top of a file is not a lost promise.
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['test', 'resolves', 'rejects'], package: '@tapjs/core' },
            { from: 'package', name: ['test'], package: '@tapjs/test' }
          ]
        }
      ],
      // `const { status: _status, ...rest } = o` is how a field is left out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-prototype-builtins': 'error'
    }
  },
  {
    files: ['tests/**/*.ts'],
    rules: {
      // Tests read JSON: HTTP answers (`res.json()`), API objects, parsed YAML. Their values are
      // `any` or open JSON by nature and every one is checked by value in an assertion, so the
      // unsafe-`any` family and the object-stringification check would flag each read.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      // tap subtests are written `async (t) => { ... }` whether or not they await: tap handles both.
      '@typescript-eslint/require-await': 'off',
      // Cluster tests keep loose views of API answers (`type Obj = any`), checked by value.
      '@typescript-eslint/no-explicit-any': 'off'
    }
  },
  {
    files: ['hooks/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      // Keys in hook requests are chosen by users: `constructor` or `toString` must never find a
      // member of every object. Own-property reads go through Object.hasOwn, ownValue or a Map.
      'no-restricted-syntax': [
        'error',
        {
          selector: "BinaryExpression[operator='in']",
          message: '`in` also finds inherited members (constructor, toString); use Object.hasOwn or a Map.'
        },
        {
          selector: "CallExpression[callee.property.name='hasOwnProperty']",
          message: 'Use Object.hasOwn.'
        }
      ]
    }
  },
  {
    // fastify plugins and hooks are async functions by contract (or take a callback); one with
    // nothing to await is still written async so that fastify waits on it the documented way.
    files: ['hooks/server/plugins/**/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' }
  }
)

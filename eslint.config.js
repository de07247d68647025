// Lint rules that catch what the compiler does not: promises nobody awaits, `any` in product code.
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['node_modules/**', '.tap/**', 'dist/**', 'deploy/**'] },
  {
    files: ['hooks/**/*.ts', 'tests/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // tap queues subtests itself; `t.test(...)` at the top of a file is not a lost promise.
        { allowForKnownSafeCalls: [{ from: 'package', name: ['test', 'resolves', 'rejects'], package: '@tapjs/core' }, { from: 'package', name: ['test'], package: '@tapjs/test' }] }
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error'
    }
  },
  {
    files: ['hooks/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      // Keys in hook requests are chosen by users: `constructor` or `toString` must never find a
      // member of every object. Own-property reads go through Object.hasOwn, ownValue or a Map.
      'no-prototype-builtins': 'error',
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
  }
)

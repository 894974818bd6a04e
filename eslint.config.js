// Lint profile: typescript-eslint recommended on hand-written code; generated/ is tool output.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['node_modules/', 'generated/', 'engine-cuda/build/', 'models/', 'scripts/demo-model/work/', 'web/dist/'],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
);

import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.next/**', '**/build/**', '**/.react-router/**', '.toolchain/**', 'bench/results/**', 'bench/.work/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Test helpers parse JSON bodies of many shapes.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // Scripts create-spindle's templates ship to the browser.
  { files: ['packages/create-spindle/templates/*/shared/public/**/*.js'], languageOptions: { globals: { ...globals.browser } } },
)

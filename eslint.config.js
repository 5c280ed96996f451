// Lint: typescript-eslint's recommended rules on src, test and bench.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.tap/', 'scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }]
    }
  },
  // The map page's script runs in the browser, with Leaflet's global L.
  {
    files: ['src/map/public/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser, L: 'readonly' } }
  }
)

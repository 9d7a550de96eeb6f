import { defineConfig } from 'vite'
import { fileURLToPath } from 'node:url'

// The web app: built by `npm install` (prepare → build:web) into dist/web and served at /app by
// `workplace serve` (src/platform/http/web-app.ts). Preact through the automatic JSX runtime; the
// administrator pages are separate chunks loaded on demand, so the inbox carries none of them.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/app/',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
  },
})

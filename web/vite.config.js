import { defineConfig } from 'vite'
import { fileURLToPath } from 'node:url'

// The web app: built by `npm install` (prepare → build:web) into dist/web and served at /app by
// `workplace serve` (src/platform/http/web-app.ts). Preact through the automatic JSX runtime; the
// administrator pages are separate chunks loaded on demand, so the inbox carries none of them.
/**
 * precache.json: the files of this build (index.html and every hashed asset, lazy pages included),
 * which the service worker (public/sw.js) caches so that the app starts and navigates offline.
 */
const precacheList = {
  name: 'workplace-precache-list',
  enforce: 'post',
  generateBundle(_options, bundle) {
    const files = Object.keys(bundle).filter((name) => name.startsWith('assets/'))
    this.emitFile({
      type: 'asset',
      fileName: 'precache.json',
      source: JSON.stringify(['/app/index.html', ...files.sort().map((name) => `/app/${name}`)]),
    })
  },
}

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/app/',
  publicDir: 'public',
  logLevel: 'warn',
  plugins: [precacheList],
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

#!/usr/bin/env node
// Runs the compiled JavaScript in dist/ (`npm run build`; `npm install` builds it through `prepare`).
// From a checkout without a build, or with WORKPLACE_FROM_SOURCE=1 (the test runner sets it, so tests
// never run a stale build), it runs the TypeScript sources through tsx, a development dependency.
import { existsSync } from 'node:fs'

const compiled = new URL('../dist/cli.js', import.meta.url)
if (process.env.WORKPLACE_FROM_SOURCE !== '1' && existsSync(compiled)) {
  await import(compiled.href)
} else {
  const tsx = await import('tsx/esm/api').catch(() => undefined)
  if (!tsx) {
    process.stderr.write(
      'workplace: no build in dist/ and no tsx to run the sources: run `npm install` (it builds) or `npm run build`\n',
    )
    process.exit(1)
  }
  tsx.register()
  await import('../src/cli.ts')
}

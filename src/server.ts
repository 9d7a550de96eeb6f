import closeWithGrace from 'close-with-grace'
import { createLogger } from './platform/logging.js'
import type { Runner } from 'graphile-worker'
import type { Config } from './config.js'
import { buildApp } from './app.js'
import { collectJobs, openRuntimeDatabase, runWorker } from './runtime.js'
import { stopWorker } from './platform/jobs/jobs.js'
import { demoInstructions, isDatabaseEmpty, type DemoResult } from './modules/tenants/index.js'
import { runDemo } from './demo.js'

/** `workplace serve`: migrate, create the demo tenant on an empty database, serve HTTP and run the worker. */
export async function serve(config: Config): Promise<void> {
  const log = createLogger({ level: config.logLevel, format: config.logFormat })
  const handle = await openRuntimeDatabase(config, log, { requests: true })
  if (await isDatabaseEmpty(handle.db)) {
    const demo = await runDemo(config, handle)
    if (demo.created) printDemoCredentials(config, demo)
  }
  const app = await buildApp({ config, db: handle.db, logger: log, databaseUrl: handle.directUrl })
  let worker: Runner | undefined
  if (config.jobs.runWorker) worker = await runWorker(handle, { db: handle.db, config, log })

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an error')
    else log.info({ signal }, 'shutting down')
    // in parallel, within the 10 s grace: HTTP stops accepting and lets in-flight requests finish;
    // the worker gives running jobs 5 s, then releases them for a retry
    const [, stopped] = await Promise.all([
      app.close().then(() => log.info('http server closed')),
      worker ? stopWorker(worker).then((outcome) => (log.info({ outcome }, 'worker stopped'), outcome)) : undefined,
    ])
    // a released job may still be running: on an external database, leave the pool to the process exit
    // rather than failing that job on a closed pool (it is retried: jobs are idempotent)
    if (stopped === 'released' && config.db.url) return
    await handle.close() // ends the pool, stops embedded PostgreSQL we started
    log.info('database closed')
  })
  await app.listen({ port: config.http.port, host: config.http.host })
  log.info(`web app: http://${config.http.host}:${config.http.port}/app   API docs: /docs`)
}

/** `workplace worker`: only the job runner. */
export async function serveWorker(config: Config): Promise<void> {
  const log = createLogger({ level: config.logLevel, format: config.logFormat })
  const handle = await openRuntimeDatabase(config, log)
  const deps = { db: handle.db, config, log }
  const worker = await runWorker(handle, deps)
  log.info({ tasks: Object.keys(collectJobs(deps).handlers) }, 'worker started')
  closeWithGrace({ delay: 10_000 }, async () => {
    await stopWorker(worker)
    await handle.close()
  })
  await worker.promise
}

function printDemoCredentials(config: Config, demo: DemoResult): void {
  const base = `http://${config.http.host}:${config.http.port}`
  const [created, credentials, ...requests] = demoInstructions(base, demo)
  const lines = [
    created,
    credentials,
    `  Web app: ${base}/app   (sign in with tenant demo and the credentials above)`,
    ...requests,
  ]
  process.stdout.write(['', ...lines, `API docs: ${base}/docs`, ''].join('\n') + '\n')
}

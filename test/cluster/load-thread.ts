/**
 * A load generator on a thread of its own (the fairness test): its event loop is not the one that times
 * another tenant's requests, so one tenant's flood cannot delay the other's measure inside the test
 * process itself (the thread's body: load-thread-worker.js).
 */
import { Worker } from 'node:worker_threads'

export interface LoadThreadOptions {
  baseUrl: string
  path: string
  token: string
  connections: number
  /** Stop after this many requests (all connections together)… */
  maxRequests: number
  /** …or after this long, whichever comes first (or when `stop` is called). */
  maxMs: number
}

export interface LoadThreadReport {
  /** Milliseconds of each answered request, in completion order. */
  latencies: number[]
  byStatus: Record<string, number>
  elapsedMs: number
}

/** Starts the generator on a new thread; `stop` ends it early, `report` is what it measured. */
export function startLoadThread(options: LoadThreadOptions): {
  report: Promise<LoadThreadReport>
  stop: () => void
} {
  const worker = new Worker(new URL('./load-thread-worker.js', import.meta.url), { workerData: options })
  const report = new Promise<LoadThreadReport>((resolve, reject) => {
    worker.once('message', (message: LoadThreadReport) => resolve(message))
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`load thread exited (${code}) without a report`)))
  })
  return { report, stop: () => worker.postMessage('stop') }
}

// The body of a load thread (load-thread.ts): plain JavaScript, as a worker thread does not inherit
// the test runner's TypeScript loader. Answers' bodies are read and dropped, not parsed.
import { parentPort, workerData } from 'node:worker_threads'
import { Agent, request } from 'undici'

const options = workerData
const agent = new Agent({ connections: options.connections, keepAliveTimeout: 5_000 })
const latencies = []
const byStatus = {}
const started = performance.now()
const deadline = started + options.maxMs
let stopped = false
parentPort.on('message', (message) => {
  if (message === 'stop') stopped = true
})
let sent = 0
await Promise.all(
  Array.from({ length: options.connections }, async () => {
    while (!stopped && sent < options.maxRequests && performance.now() < deadline) {
      sent++
      const start = performance.now()
      let status = 0
      try {
        const response = await request(options.baseUrl + options.path, {
          dispatcher: agent,
          headers: { authorization: `Bearer ${options.token}` },
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        })
        await response.body.arrayBuffer()
        status = response.statusCode
      } catch {
        // status 0: no answer
      }
      latencies.push(performance.now() - start)
      byStatus[status] = (byStatus[status] ?? 0) + 1
    }
  }),
)
await agent.close()
parentPort.postMessage({ latencies, byStatus, elapsedMs: performance.now() - started })
parentPort.close()

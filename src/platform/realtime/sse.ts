import type { FastifyReply, FastifyRequest } from 'fastify'
import { trackOpenStream } from '../metrics/index.js'

/** One open Server-Sent Events response. */
export interface EventStream {
  /** `id` becomes the client's Last-Event-ID, sent back when it reconnects. */
  send(event: string, data: unknown, id?: string): void
  /** Ends the response (server shutdown); the close callbacks run. */
  end(): void
  onClose(callback: () => void): void
  readonly closed: boolean
}

export interface EventStreamOptions {
  /** A comment line keeps proxies and load balancers from closing an idle stream. */
  heartbeatMs?: number
}

/**
 * Takes over the response and opens an SSE stream. Fastify's reply pipeline is bypassed (hijack), so
 * the security headers of the app's onSend hook are set here.
 */
export function openEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  options: EventStreamOptions = {},
): EventStream {
  reply.hijack()
  const raw = reply.raw
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-content-type-options': 'nosniff',
    'x-request-id': request.id,
  })
  raw.write('retry: 5000\n\n')

  const callbacks: Array<() => void> = [trackOpenStream()]
  let closed = false
  const heartbeat = setInterval(() => {
    if (!closed) raw.write(': heartbeat\n\n')
  }, options.heartbeatMs ?? 25_000)
  heartbeat.unref()

  const finish = () => {
    if (closed) return
    closed = true
    clearInterval(heartbeat)
    for (const callback of callbacks.splice(0)) {
      try {
        callback()
      } catch (error) {
        request.log.warn({ err: error }, 'event stream close callback failed')
      }
    }
  }
  request.raw.on('close', finish)
  raw.on('close', finish)
  raw.on('error', finish)

  return {
    send(event, data, id) {
      if (closed) return
      // JSON never contains a raw newline, so one data line per event is enough.
      raw.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    },
    end() {
      if (!closed) raw.end()
      finish()
    },
    onClose(callback) {
      if (closed) callback()
      else callbacks.push(callback)
    },
    get closed() {
      return closed
    },
  }
}

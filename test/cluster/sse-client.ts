import http from 'node:http'
import { readEventStream, type ServerSentEvent } from '../helpers/sse.js'

/**
 * What a browser's EventSource does: reads events, remembers the last `id`, and when the connection
 * ends reconnects (here after 300 ms instead of the server's `retry`) sending `Last-Event-ID`.
 */
export function openResumingStream(url: string, token: string) {
  const events: ServerSentEvent[] = []
  /** The node (HAProxy's x-served-by) of each connection, in order. */
  const connections: string[] = []
  let lastEventId: string | undefined
  let closed = false
  let current: http.ClientRequest | undefined

  const connect = () => {
    if (closed) return
    const request = http.get(url, {
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'text/event-stream',
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      },
    })
    current = request
    const retry = () => {
      if (current !== request) return
      current = undefined
      setTimeout(connect, 300)
    }
    request.on('error', retry)
    request.on('response', (response) => {
      if (response.statusCode !== 200) {
        response.resume()
        response.on('end', retry)
        return
      }
      connections.push(String(response.headers['x-served-by'] ?? '?'))
      readEventStream(
        response,
        (event) => events.push(event),
        (id) => {
          lastEventId = id
        },
      )
      response.on('end', retry)
      response.on('error', retry)
      response.on('close', retry)
    })
  }
  connect()

  return {
    events,
    connections,
    titles: () => events.filter((e) => e.event === 'notification').map((e) => e.data.data.title as string),
    close() {
      closed = true
      current?.destroy()
    },
  }
}

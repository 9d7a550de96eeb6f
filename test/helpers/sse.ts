import type { IncomingMessage } from 'node:http'

export interface ServerSentEvent {
  id?: string
  event: string
  data: any
}

/**
 * Reads a `text/event-stream` response: `onEvent` gets each complete event (its JSON `data` parsed),
 * `onId` each `id` line (comment-only blocks such as heartbeats are skipped).
 */
export function readEventStream(
  response: IncomingMessage,
  onEvent: (event: ServerSentEvent) => void,
  onId?: (id: string) => void,
): void {
  let buffer = ''
  response.setEncoding('utf8')
  response.on('data', (chunk: string) => {
    buffer += chunk
    let end
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const id = /^id: (.*)$/m.exec(block)?.[1]
      const event = /^event: (.*)$/m.exec(block)?.[1]
      const data = /^data: (.*)$/m.exec(block)?.[1]
      if (id !== undefined) onId?.(id)
      if (event && data) onEvent({ id, event, data: JSON.parse(data) })
    }
  })
}

/**
 * The live notification stream: `GET /api/notifications/stream` through the typed client (a fetch
 * stream, since EventSource cannot send the bearer token), parsed as Server-Sent Events. After a drop
 * (the network, the server, the browser going offline) it reconnects with `Last-Event-ID`, and the
 * server replays what was missed. `unread` follows the `count` events; `notification` events go to
 * whoever listens (the inbox).
 */
import { api, isRecord, store, type Schemas } from './core.ts'

export type Notification = Schemas['Notification']

export const unread = store<number | undefined>(undefined)
export const connection = store<'connecting' | 'open' | 'closed'>('closed')
const listeners = new Set<(notification: Notification) => void>()

export function onNotification(listener: (notification: Notification) => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

let controller: AbortController | undefined
let lastEventId: string | undefined
let retryMs = 1000
let running = false
let timer: ReturnType<typeof setTimeout> | undefined

/** Exposed for the browser tests: the Last-Event-ID this stream would resume from. */
export function streamPosition(): string | undefined {
  return lastEventId
}

/** A `notification` event's record: an object, the server's presented notification (every field optional). */
const isNotification = (value: unknown): value is Notification => isRecord(value)

function dispatch(event: string, data: string) {
  try {
    if (event === 'count') {
      const count: unknown = JSON.parse(data)
      if (isRecord(count) && typeof count.unread === 'number') unread.set(count.unread)
    } else if (event === 'notification') {
      const record: unknown = JSON.parse(data)
      if (isNotification(record)) for (const listener of [...listeners]) listener(record)
    }
  } catch {
    // a malformed event is skipped
  }
}

async function connectOnce(signal: AbortSignal): Promise<void> {
  connection.set('connecting')
  const { data, response } = await api.GET('/api/notifications/stream', {
    parseAs: 'stream',
    signal,
    headers: lastEventId ? { 'last-event-id': lastEventId } : {},
  })
  if (!response.ok || !data) throw new Error(`stream answered ${response.status}`)
  connection.set('open')
  retryMs = 1000
  const reader = data.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  let event = 'message'
  let lines: string[] = []
  let id: string | undefined
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let newline: number
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1))
      if (line === '') {
        if (id !== undefined) lastEventId = id
        if (lines.length) dispatch(event, lines.join('\n'))
        event = 'message'
        lines = []
        id = undefined
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') event = text
      else if (field === 'data') lines.push(text)
      else if (field === 'id') id = text
      else if (field === 'retry' && /^\d+$/.test(text)) retryMs = Math.min(Number(text), 5000)
    }
  }
}

function schedule(delay: number) {
  clearTimeout(timer)
  timer = setTimeout(() => void loop(), delay)
}

async function loop(): Promise<void> {
  if (!running) return
  controller?.abort()
  const current = (controller = new AbortController())
  try {
    await connectOnce(current.signal)
  } catch {
    // dropped or refused: reconnect below
  }
  if (!running || current !== controller) return
  connection.set('connecting')
  // quick first retry, then back off up to the server's `retry`
  schedule(navigator.onLine ? Math.min(retryMs, 1000) : 60_000)
  retryMs = Math.min(retryMs * 2, 5000)
}

function dropped() {
  // the network went away: end the stream now, resume with Last-Event-ID when it is back
  controller?.abort()
  controller = undefined
  connection.set('connecting')
}
function back() {
  if (running) schedule(0)
}

export function startLive(): void {
  if (running) return
  running = true
  addEventListener('offline', dropped)
  addEventListener('online', back)
  schedule(0)
}

export function stopLive(): void {
  running = false
  clearTimeout(timer)
  removeEventListener('offline', dropped)
  removeEventListener('online', back)
  controller?.abort()
  controller = undefined
  lastEventId = undefined
  unread.set(undefined)
  connection.set('closed')
}

/** Values written later, in batches, off the path of the request that produced them. */
export interface WriteBehind<V> {
  /** Buffers `value`; one with the `key` of a value still buffered replaces it (in its place). */
  add(value: V, key?: unknown): void
  /** Writes what is buffered now, after the writes before it (shutdown and tests; the timer otherwise). */
  flush(): Promise<void>
}

export interface WriteBehindOptions<V> {
  /** How long a value waits at most before its batch is written. */
  delayMs: number
  /** A batch is written at once when this many values wait (no bound unless given). */
  maxBuffered?: number
  /** Writes one batch, in the order the values came. */
  write: (batch: V[]) => Promise<void>
  /** A failed write: its batch is dropped (what is buffered is a log, never the only copy of a change). */
  onError: (error: unknown) => void
}

/**
 * The one write-behind buffer: a timer (unref'd: it never keeps the process alive) writes what was
 * added within `delayMs` in one batch; batches are written one after the other. A crash loses what is
 * buffered, so only what may be lost goes here (access logs, last-use times), never an audited change.
 */
export function createWriteBehind<V>({ delayMs, maxBuffered, write, onError }: WriteBehindOptions<V>): WriteBehind<V> {
  let buffer = new Map<unknown, V>()
  let timer: NodeJS.Timeout | undefined
  let writing: Promise<void> = Promise.resolve()

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer)
    timer = undefined
    const batch = [...buffer.values()]
    buffer = new Map()
    writing = writing.then(() => (batch.length > 0 ? write(batch) : undefined)).catch(onError)
    return writing
  }

  function add(value: V, key: unknown = Symbol()): void {
    buffer.set(key, value)
    if (maxBuffered !== undefined && buffer.size >= maxBuffered) void flush()
    else if (!timer) timer = setTimeout(() => void flush(), delayMs).unref()
  }

  return { add, flush }
}

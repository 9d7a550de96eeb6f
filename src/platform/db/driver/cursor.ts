/* eslint-disable @typescript-eslint/no-explicit-any -- pg-cursor's and pg's connection internals */
import Cursor from 'pg-cursor'

let cursorPortals = 0

interface CursorConnection {
  stream?: { destroyed?: boolean; writable?: boolean }
  once(event: 'end', listener: () => void): void
  removeListener(event: 'end', listener: () => void): void
}

/**
 * The cursor Kysely streams unlimited lists with: pg-cursor, made to settle when its connection dies,
 * to reuse the statement prepared on its connection, and to send its messages in one write each time.
 *
 * pg-cursor's `close()` waits for the server's ReadyForQuery; when the connection dies mid-stream or
 * while closing (database restarted) that never comes, and Kysely awaits `close()` in the stream's
 * `finally`: the request hung forever. Here the connection's end settles the close too; by then the
 * client is marked broken, so the pool drops it instead of lending it out again.
 */
export class SettlingCursor extends Cursor {
  declare text: string
  /** Set by the driver in session mode: the cursor then reuses the statement prepared on its connection. */
  name?: string

  override close(callback?: (error: Error) => void): any {
    if (callback) return super.close(callback)
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg-cursor's internal state, not in its typings
    const self = this as unknown as { state: string; connection?: CursorConnection }
    const connection = self.connection
    if (!connection) return super.close()
    if (connection.stream?.destroyed || connection.stream?.writable === false) {
      self.state = 'done'
      return Promise.resolve()
    }
    return new Promise<void>((resolve) => {
      const settle = () => {
        connection.removeListener('end', settle)
        resolve()
      }
      connection.once('end', settle)
      super.close().then(settle, settle)
    })
  }
}

// pg-cursor always parses its text unnamed, so a streamed list was planned anew on every request
// (0.5-1 ms, more than its execution for a short list). This is its `submit` with a named statement,
// kept in the connection's prepared-statement bookkeeping like node-postgres' own named queries.
// (Assigned to the prototype: pg-cursor's typings declare `submit` as a property.)
Object.defineProperty(SettlingCursor.prototype, 'submit', {
  value: function submit(this: any, connection: any): void {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg-cursor's own submit, typed as a property
    if (!this.name) return corked(connection, () => (Cursor.prototype as any).submit.call(this, connection))
    corked(connection, () => submitNamed(this, connection))
  },
})

// pg-cursor sends each protocol message with a write of its own (node-postgres' queries cork the
// socket): parse, bind, describe, flush, then execute, flush, then close, sync were up to eight
// syscalls per streamed list, the largest share of a short list's CPU in the profile
for (const method of ['_getRows', '_closePortal']) {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg-cursor's private methods, not in its typings
  const original = (Cursor.prototype as any)[method]
  Object.defineProperty(SettlingCursor.prototype, method, {
    value: function (this: any, ...args: unknown[]) {
      return this.connection ? corked(this.connection, () => original.apply(this, args)) : original.apply(this, args)
    },
  })
}

function corked<T>(connection: { stream?: { cork?: () => void; uncork?: () => void } }, send: () => T): T {
  connection.stream?.cork?.()
  try {
    return send()
  } finally {
    connection.stream?.uncork?.()
  }
}

function submitNamed(self: any, connection: any): void {
  self.state = 'submitted'
  self.connection = connection
  self._portal = `P_${++cursorPortals}`
  if (
    connection.parsedStatements[self.name] === undefined &&
    connection.submittedNamedStatements[self.name] === undefined
  ) {
    connection.parse({ text: self.text, name: self.name })
    connection.submittedNamedStatements[self.name] = self.text
  }
  connection.bind({ portal: self._portal, statement: self.name, values: self.values })
  connection.describe({ type: 'P', name: self._portal })
  connection.flush()
  if (self._conf.types) self._result._getTypeParser = self._conf.types.getTypeParser
  connection.once('noData', self._ifNoData)
  connection.once('rowDescription', self._rowDescription)
}

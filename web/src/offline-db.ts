/**
 * The web app's IndexedDB (`workplace-offline`), on the raw API: the API answers a signed-in user last
 * read (`answers`, keyed by owner and URL) and the marks and confirmations made offline (`outbox`, keyed
 * by owner, method and URL: the same write queued twice is kept once). The owner is `tenant/userId`:
 * one user's records are never read for another. No token is ever stored here.
 * Every function fails soft (an unavailable IndexedDB means: nothing saved, nothing read).
 */

export interface SavedAnswer {
  owner: string
  url: string
  body: string
  type: string
  savedAt: number
}

export interface QueuedWrite {
  owner: string
  method: string
  /** path and query, same origin */
  url: string
  body: string
  contentType: string
  queuedAt: number
}

const ANSWERS = 'answers'
const OUTBOX = 'outbox'
let opening: Promise<IDBDatabase> | undefined

function open(): Promise<IDBDatabase> {
  opening ??= new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open('workplace-offline', 1)
    request.onupgradeneeded = () => {
      const db = request.result
      db.createObjectStore(ANSWERS, { keyPath: ['owner', 'url'] }).createIndex('owner', 'owner')
      db.createObjectStore(OUTBOX, { keyPath: ['owner', 'method', 'url'] }).createIndex('owner', 'owner')
    }
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error ?? new Error('IndexedDB did not open'))
  }).catch((error: unknown) => {
    opening = undefined
    throw error
  })
  return opening
}

/** Runs `work` in one transaction; resolves with its request's result when the transaction committed. */
async function inTransaction<T>(
  name: string,
  mode: IDBTransactionMode,
  work: (store: IDBObjectStore) => IDBRequest<T> | void,
): Promise<T | undefined> {
  const db = await open()
  return new Promise<T | undefined>((resolve, reject) => {
    const tx = db.transaction(name, mode)
    const request = work(tx.objectStore(name))
    tx.oncomplete = () => resolve(request ? request.result : undefined)
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'))
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
  })
}

/**
 * Deletes, in one transaction, the owner's records (`keep`: every record but the owner's saved after
 * `since`).
 */
function deleteOwned(store: IDBObjectStore, owner: string, keep?: { since: number }): void {
  const cursor = keep ? store.openCursor() : store.index('owner').openCursor(IDBKeyRange.only(owner))
  cursor.onsuccess = () => {
    const at = cursor.result
    if (!at) return
    const value: unknown = at.value
    const kept = !!keep && isRecord(value) && value.owner === owner && num(value.savedAt) >= keep.since
    if (!kept) at.delete()
    at.continue()
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
const str = (value: unknown): string => (typeof value === 'string' ? value : '')
const num = (value: unknown): number => (typeof value === 'number' ? value : 0)

function toAnswer(value: unknown): SavedAnswer | undefined {
  if (!isRecord(value)) return undefined
  return {
    owner: str(value.owner),
    url: str(value.url),
    body: str(value.body),
    type: str(value.type),
    savedAt: num(value.savedAt),
  }
}

function toWrite(value: unknown): QueuedWrite | undefined {
  if (!isRecord(value)) return undefined
  return {
    owner: str(value.owner),
    method: str(value.method),
    url: str(value.url),
    body: str(value.body),
    contentType: str(value.contentType),
    queuedAt: num(value.queuedAt),
  }
}

const soft = <T>(promise: Promise<T>, fallback: T): Promise<T> => promise.catch(() => fallback)

export function saveAnswer(answer: SavedAnswer): Promise<void> {
  return soft(
    inTransaction(ANSWERS, 'readwrite', (s) => void s.put(answer)).then(() => undefined),
    undefined,
  )
}

export async function readAnswer(owner: string, url: string): Promise<SavedAnswer | undefined> {
  const value = await soft(
    inTransaction<unknown>(ANSWERS, 'readonly', (s) => s.get([owner, url])),
    undefined,
  )
  return toAnswer(value)
}

export function queueWrite(write: QueuedWrite): Promise<void> {
  return inTransaction(OUTBOX, 'readwrite', (s) => void s.put(write)).then(() => undefined)
}

/** The owner's queued writes, oldest first. */
export async function listWrites(owner: string): Promise<QueuedWrite[]> {
  const values = await soft(
    inTransaction<unknown[]>(OUTBOX, 'readonly', (s) => s.index('owner').getAll(IDBKeyRange.only(owner))),
    [],
  )
  return (values ?? [])
    .map(toWrite)
    .filter((w): w is QueuedWrite => !!w)
    .sort((a, b) => a.queuedAt - b.queuedAt)
}

export function deleteWrite(write: Pick<QueuedWrite, 'owner' | 'method' | 'url'>): Promise<void> {
  return soft(
    inTransaction(OUTBOX, 'readwrite', (s) => void s.delete([write.owner, write.method, write.url])).then(
      () => undefined,
    ),
    undefined,
  )
}

/** Sign-out: everything of this owner goes, saved answers and writes not yet sent. */
export async function forgetOwner(owner: string): Promise<void> {
  await soft(
    inTransaction(ANSWERS, 'readwrite', (s) => deleteOwned(s, owner)),
    undefined,
  )
  await soft(
    inTransaction(OUTBOX, 'readwrite', (s) => deleteOwned(s, owner)),
    undefined,
  )
}

/**
 * A sign-in: other users' saved answers go (on a shared device; their queued writes wait for them), and
 * the owner's saved before `since`.
 */
export async function forgetOtherAnswers(owner: string, since: number): Promise<void> {
  await soft(
    inTransaction(ANSWERS, 'readwrite', (s) => deleteOwned(s, owner, { since })),
    undefined,
  )
}

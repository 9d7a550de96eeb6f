/**
 * Offline (issue 43; docs/decisions/0026-web-app-offline.md). The `fetch` below the typed client:
 *
 * - a GET of what the inbox, the infoboard and the content pages read is answered by the network and
 *   saved in IndexedDB for the signed-in user; without a network, the saved answer is returned;
 * - a mark as read, a "seen" or a reading confirmation that cannot reach the server is queued in
 *   IndexedDB and answered `202` with `x-workplace-queued`; the queue is sent when the network is
 *   back (these writes are idempotent on the server), and then the pages load the server's answer.
 *
 * The service worker (public/sw.js) keeps the app's own files, so a reload works without a network.
 */
import { store } from './observable.ts'
import {
  deleteWrite,
  forgetOtherAnswers,
  forgetOwner,
  listWrites,
  queueWrite,
  readAnswer,
  saveAnswer,
  type QueuedWrite,
} from './offline-db.ts'

/** 'offline' from the browser's `offline` event or a request that found no network, until one gets through. */
export const network = store<'online' | 'offline'>(navigator.onLine ? 'online' : 'offline')
/** The signed-in user's writes waiting to be sent ({ method, url } each). */
export const pendingWrites = store<ReadonlyArray<Pick<QueuedWrite, 'method' | 'url'>>>([])
/** Counts the times queued writes were sent: a page that shows their targets loads again. */
export const replayed = store(0)

/** The GETs whose answers are kept for offline reading (path without query). */
const READABLE = [
  /^\/api\/users\/current$/,
  /^\/api\/notifications(\/count)?$/,
  /^\/api\/folders(\/\d+)?$/,
  /^\/api\/infoboard\/posts(\/\d+)?$/,
  /^\/api\/manuals\/(chapters|entries)(\/\d+)?$/,
  /^\/api\/manuals\/chapters\/\d+\/entries$/,
  /^\/api\/calendar\/events(\/\d+)?$/,
  /^\/api\/filemanager\/files(\/\d+)?$/,
]

/** The writes queued offline: idempotent marks and confirmations. */
const QUEUEABLE: Array<[method: string, path: RegExp]> = [
  ['POST', /^\/api\/(infoboard\/posts|manuals\/entries)\/\d+\/(seen|confirmation)$/],
  // one notification's mark; "mark all" is not queued (sent later, it would mark what arrived meanwhile)
  ['PUT', /^\/api\/notifications\/[0-9a-f-]+$/i],
]

let owner: string | undefined
let token: string | undefined

/**
 * Who is signed in: `tenant/userId` keys what is saved and queued, the token sends the queue (it is
 * kept in memory only). Called with the stored owner before the session is checked, so that a start
 * without a network finds the saved answers.
 */
export function setOwner(next: { owner: string; token: string } | undefined): void {
  owner = next?.owner
  token = next?.token
  void refreshPending()
}

/**
 * A signed-in user: on a shared device other users' saved answers are removed, and hers older than
 * 30 days; her queue is sent.
 */
export function signedIn(): void {
  if (!owner) return
  void forgetOtherAnswers(owner, Date.now() - 30 * 24 * 3600_000)
  void replay()
}

/** Keeps an answer the client read before the owner was known (the session's user at sign-in). */
export function keepAnswer(url: string, data: unknown): void {
  if (!url || !owner) return // an answer read back from IndexedDB has no URL: it is saved already
  const parsed = new URL(url)
  if (parsed.origin === location.origin)
    void saveAnswer({
      owner,
      url: answerKey(parsed.pathname + parsed.search),
      body: JSON.stringify(data),
      type: 'application/json',
      savedAt: Date.now(),
    })
}

/** Sign-out: this user's saved answers and unsent writes are removed. */
export async function forget(): Promise<void> {
  const was = owner
  setOwner(undefined)
  if (was) await forgetOwner(was)
  pendingWrites.set([])
}

/** Whether an answer of the client is a write queued offline (not sent yet). */
export function wasQueued(response: Response | undefined): boolean {
  return response?.headers.get('x-workplace-queued') === '1'
}

/** Whether a write to `url` (path) is waiting in the queue. */
export function isPending(
  writes: ReadonlyArray<Pick<QueuedWrite, 'method' | 'url'>>,
  method: string,
  url: string,
): boolean {
  return writes.some((w) => w.method === method && w.url.split('?')[0] === url)
}

/**
 * The key an answer is saved under: path and query, a timestamp in the query made `*` — "published
 * before now" asks the same question at every load, and its latest answer is what to show offline.
 */
const answerKey = (url: string) =>
  url.replace(/=\d{4}-\d{2}-\d{2}(?:%20|\+|T| )\d{2}(?:%3A|:)\d{2}(?:(?:%3A|:)\d{2})?(?:\.\d+)?Z?/gi, '=*')

const localUrl = (request: Request) => {
  const url = new URL(request.url)
  return url.origin === location.origin ? url.pathname + url.search : undefined
}

let lastReplay = 0

/** A request got through: the network is back; queued writes go (at most every 5 s from here). */
function reached() {
  network.set('online')
  if (pendingWrites.get().length && Date.now() - lastReplay > 5000) void replay()
}

/**
 * The typed client's `fetch`: network first; a readable GET is saved, and read back when there is no
 * network; a queueable write without a network is queued. `notSaved` is the error's text when
 * nothing was saved for a GET.
 */
export function offlineFetch(notSaved: () => string): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = localUrl(request)
    const path = url?.split('?')[0] ?? ''
    const readable = request.method === 'GET' && READABLE.some((re) => re.test(path))
    const queueable = QUEUEABLE.some(([method, re]) => method === request.method && re.test(path))
    const body = queueable ? await request.clone().text() : ''
    const who = owner
    let response: Response
    try {
      response = await fetch(request)
    } catch (error) {
      // an aborted request (the live stream reconnecting) says nothing about the network
      if (request.signal.aborted) throw error
      network.set('offline')
      if (!url || !who) throw error
      if (readable) return savedAnswer(who, answerKey(url), notSaved)
      if (queueable) return queued(request, who, url, body)
      throw error
    }
    reached()
    // not saved when the user signed out (or another signed in) while it was under way
    if (readable && url && who && who === owner && response.status === 200) {
      const type = response.headers.get('content-type') ?? ''
      if (type.includes('json')) {
        const text = await response.clone().text()
        void saveAnswer({ owner: who, url: answerKey(url), body: text, type, savedAt: Date.now() })
      }
    }
    return response
  }
}

async function savedAnswer(who: string, url: string, notSaved: () => string): Promise<Response> {
  const saved = await readAnswer(who, url)
  if (!saved) throw new Error(notSaved())
  return new Response(saved.body, {
    status: 200,
    headers: { 'content-type': saved.type, 'x-workplace-saved-at': new Date(saved.savedAt).toISOString() },
  })
}

async function queued(request: Request, who: string, url: string, body: string): Promise<Response> {
  await queueWrite({
    owner: who,
    method: request.method,
    url,
    body,
    contentType: request.headers.get('content-type') ?? '',
    queuedAt: Date.now(),
  })
  await refreshPending()
  return new Response(null, { status: 202, headers: { 'x-workplace-queued': '1', 'content-length': '0' } })
}

async function refreshPending(): Promise<void> {
  const who = owner
  const writes = who ? await listWrites(who) : []
  if (who === owner) pendingWrites.set(writes.map(({ method, url }) => ({ method, url })))
}

let replaying: Promise<void> | undefined

/**
 * Sends the queued writes in order. Sent (2xx) or refused for good (another 4xx: the post is gone, no
 * confirmation needed…) leaves the queue: the server's answer wins, the pages load it again. No
 * network, 401, 408, 429 or 5xx: the rest stays for the next time.
 */
export function replay(): Promise<void> {
  replaying ??= (async () => {
    lastReplay = Date.now()
    try {
      const who = owner
      if (!who) return
      let sent = 0
      for (const write of await listWrites(who)) {
        if (who !== owner || !token) break
        let response: Response
        try {
          response = await fetch(write.url, {
            method: write.method,
            headers: {
              authorization: `Bearer ${token}`,
              ...(write.contentType ? { 'content-type': write.contentType } : {}),
            },
            body: write.body || undefined,
          })
        } catch {
          network.set('offline')
          break
        }
        network.set('online')
        await response.body?.cancel()
        if (response.status === 401 || response.status === 408 || response.status === 429 || response.status >= 500)
          break
        await deleteWrite(write)
        sent++
      }
      await refreshPending()
      if (sent) replayed.set(replayed.get() + 1)
    } finally {
      replaying = undefined
    }
  })()
  return replaying
}

addEventListener('online', () => {
  network.set('online')
  void replay()
})
addEventListener('offline', () => network.set('offline'))

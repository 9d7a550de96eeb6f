/*
 * The web app's service worker (scope /app/): keeps the app's own files for offline use, shows a Web
 * Push message and opens its URL on click. API answers are never cached here: the app keeps what it
 * read per signed-in user in IndexedDB (src/offline.ts; docs/decisions/0026-web-app-offline.md).
 */
const SHELL = 'workplace-shell-v1'
const INDEX = '/app/index.html'

/**
 * Caches every file of the current build (precache.json, written by the build: index.html and
 * /app/assets/*), so that any page, even one not opened yet, loads offline; drops older builds' files.
 * Hashed assets are fetched once; index.html every time. Never fails: offline, the cache stays as is.
 */
async function precache() {
  try {
    const listed = await fetch('/app/precache.json', { cache: 'no-cache' })
    if (!listed.ok) return
    const files = await listed.json()
    if (!Array.isArray(files)) return
    const cache = await caches.open(SHELL)
    const wanted = new Set(files.map((f) => new URL(f, self.location.origin).href))
    await Promise.all(
      files.map(async (file) => {
        if (file !== INDEX && (await cache.match(file))) return
        const response = await fetch(file, { cache: 'no-cache' })
        if (response.ok) await cache.put(file, response)
      }),
    )
    for (const request of await cache.keys()) if (!wanted.has(request.url)) await cache.delete(request)
  } catch {
    // no network: keep what is cached
  }
}

self.addEventListener('install', (event) => event.waitUntil(precache().then(() => self.skipWaiting())))
self.addEventListener('activate', (event) =>
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(names.filter((n) => n.startsWith('workplace-shell-') && n !== SHELL).map((n) => caches.delete(n))),
      )
      .then(() => self.clients.claim()),
  ),
)

/** A page of the app: the network's answer (and the build's files refreshed), else the cached index.html. */
async function page(event) {
  try {
    const response = await fetch(event.request)
    if (response.ok && (response.headers.get('content-type') || '').startsWith('text/html')) {
      const cache = await caches.open(SHELL)
      await cache.put(INDEX, response.clone())
      event.waitUntil(precache())
    }
    return response
  } catch {
    return (await caches.match(INDEX)) || Response.error()
  }
}

/** A hashed file of the build never changes: from the cache, else fetched and kept. */
async function asset(request) {
  const cached = await caches.match(request)
  if (cached) return cached
  const response = await fetch(request)
  if (response.ok) {
    const cache = await caches.open(SHELL)
    await cache.put(request, response.clone())
  }
  return response
}

self.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET') return
  const url = new URL(request.url)
  // only the app's own files; the API (/api/...) and everything else go to the network untouched
  if (url.origin !== self.location.origin) return
  if (request.mode === 'navigate' && (url.pathname === '/app' || url.pathname.startsWith('/app/')))
    event.respondWith(page(event))
  else if (url.pathname.startsWith('/app/assets/')) event.respondWith(asset(request))
})

self.addEventListener('push', (event) => {
  let payload
  try {
    payload = event.data ? event.data.json() : {}
  } catch {
    payload = { title: event.data ? event.data.text() : '' }
  }
  const data = payload.data && typeof payload.data === 'object' ? payload.data : payload
  const title = payload.title || data.title || 'Workplace'
  const body = (payload.body || data.body || '').replace(/<[^>]*>/g, '')
  const url = payload.url || data.url || '/app/inbox'
  event.waitUntil(self.registration.showNotification(title, { body, data: { url }, tag: payload.id || undefined }))
})

/** A notification's URL is a page of the app: `/infoboard/posts/63` → `/app/infoboard/posts/63`. */
function appUrl(url) {
  const parsed = new URL(url, self.location.origin)
  if (parsed.origin !== self.location.origin) return parsed.href
  return parsed.pathname.startsWith('/app/')
    ? parsed.href
    : new URL('/app' + parsed.pathname + parsed.search, self.location.origin).href
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close()
  const target = appUrl((event.notification.data && event.notification.data.url) || '/app/inbox')
  event.waitUntil(
    clients.matchAll({ type: 'window', includeUncontrolled: true }).then((windows) => {
      for (const win of windows)
        if (new URL(win.url).pathname.startsWith('/app')) return win.focus().then(() => win.navigate(target))
      return clients.openWindow(target)
    }),
  )
})

/* The web app's service worker (scope /app/): shows a Web Push message and opens its URL on click. */
self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()))

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

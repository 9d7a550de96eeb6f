import { createHash, timingSafeEqual } from 'node:crypto'

/** The provider redirects back here (register it at the provider). */
export const CALLBACK_PATH = '/api/auth/oidc/callback'
/** An authorization request (its `state`) must come back within this long, once. */
export const STATE_TTL_SECONDS = 10 * 60

/** The cookie that binds an authorization request to the browser that started it (login CSRF, issue 39). */
export const BROWSER_COOKIE = 'wp_sso_browser'
export const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url')
export const safeEqual = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

/** `Set-Cookie` for a new browser binding: HttpOnly, SameSite=Lax (it must come back on the provider's redirect). */
export function browserCookie(value: string, baseUrl: string): string {
  const secure = baseUrl.startsWith('https:') ? '; Secure' : ''
  return `${BROWSER_COOKIE}=${value}; Max-Age=${STATE_TTL_SECONDS}; Path=/api/auth/oidc; HttpOnly; SameSite=Lax${secure}`
}

/** `Set-Cookie` that removes the binding once spent. */
export const SPENT_BROWSER_COOKIE = `${BROWSER_COOKIE}=; Max-Age=0; Path=/api/auth/oidc; HttpOnly; SameSite=Lax`

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=')
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim()
  }
  return undefined
}

/**
 * `#login_code=…` on the app's redirect URI: a fragment never reaches a server, a log or a
 * `Referer` (issue 39); the app reads and removes it.
 */
export function withFragment(uri: string, name: string, value: string): string {
  const url = new URL(uri)
  url.hash = new URLSearchParams({ [name]: value }).toString()
  return url.toString()
}

/** A redirect target is the app's: same origin as APP_URL, and under its path. */
export function isUnderAppUrl(candidate: string, appUrl: string): boolean {
  let url: URL
  let app: URL
  try {
    url = new URL(candidate)
    app = new URL(appUrl)
  } catch {
    return false
  }
  if (url.origin !== app.origin || url.username || url.password) return false
  const base = app.pathname.endsWith('/') ? app.pathname : `${app.pathname}/`
  return url.pathname === app.pathname || url.pathname.startsWith(base) || app.pathname === '/'
}

/** An authorization URL and the `Set-Cookie` header that binds it to the browser. */
export interface Authorization {
  url: string
  cookie: string
}

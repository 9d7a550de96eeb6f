/**
 * The app's state outside components: the generated typed client (clients/typescript, the only API
 * layer), the session, the language and the router. Each is a tiny observable: components subscribe
 * through `useStore`.
 */
import { createWorkplaceClient, type paths } from '../../clients/typescript/index.ts'
import { de, en, type MessageKey } from './messages.ts'
import { store } from './observable.ts'
import { forget, keepAnswer, offlineFetch, setOwner, signedIn } from './offline.ts'

export { store, useStore, type Store } from './observable.ts'

// --- API ------------------------------------------------------------------------------------------
/**
 * Set while a request waits to be retried after a `429` (the server's fair-use limits, docs/limits.md):
 * the seconds it waits. The layout shows a calm "busy, retrying" note, never an error.
 */
export const retrying = store<number | undefined>(undefined)
let retryClear: ReturnType<typeof setTimeout> | undefined

export const api = createWorkplaceClient({
  baseUrl: location.origin,
  // offline: saved answers to read, marks and confirmations queued (offline.ts)
  fetch: offlineFetch(() => t('offline.notSaved')),
  onRetry: ({ waitSeconds }) => {
    retrying.set(waitSeconds)
    clearTimeout(retryClear)
    retryClear = setTimeout(() => retrying.set(undefined), (waitSeconds + 1) * 1000)
  },
})

export type Schemas = {
  Notification: NonNullable<paths['/api/notifications']['get']['responses'][200]['content']['application/json']>[number]
  CurrentUser: paths['/api/users/current']['get']['responses'][200]['content']['application/json']
  DataExport: NonNullable<paths['/api/data-exports']['get']['responses'][200]['content']['application/json']>[number]
  UserCreate: paths['/api/users']['post']['requestBody']['content']['application/json']
}

/**
 * The `filter` a list route of the generated client accepts (deepObject: `filter[field][op]=value`).
 * Values are strings as they travel in the URL (`{ null: 'true' }`, ids as `String(id)`).
 */
export type FilterOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } }
  ? NonNullable<Q> extends { filter?: infer F }
    ? NonNullable<F>
    : never
  : never

/** Whether a form value is one of the literal options a typed field takes. */
export function isOneOf<T extends string>(options: readonly T[], value: string): value is T {
  const known: readonly string[] = options
  return known.includes(value)
}

/** A parsed JSON value that is an object, its keys readable. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A parsed JSON value's field when it is a string. */
export const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

/** An RFC 9457 problem as the API sends it (`errors` keyed by dotted field path on 422). */
export interface Problem {
  status?: number
  title?: string
  detail?: string
  code?: string
  errors?: Record<string, string[]>
}

/** Turns whatever the client returned as `error` (a problem, or a failed fetch) into a Problem. */
export function asProblem(error: unknown): Problem {
  if (isRecord(error)) {
    const problem: Problem = {
      status: typeof error.status === 'number' ? error.status : undefined,
      title: textOf(error.title),
      detail: textOf(error.detail),
      code: textOf(error.code),
      errors: isRecord(error.errors) ? fieldMessages(error.errors) : undefined,
    }
    if (problem.detail || problem.title || problem.errors) return problem
    const message = textOf(error.message)
    if (message) return { detail: message }
  }
  return { detail: String(error) }
}

/** A problem's `errors`, each field's messages as strings. */
function fieldMessages(errors: Record<string, unknown>): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(errors).map(([field, messages]) => [
      field,
      Array.isArray(messages) ? messages.filter((m): m is string => typeof m === 'string') : [],
    ]),
  )
}

/** Errors for one field (exact key or nested keys below it), for the message next to that field. */
export function fieldErrors(problem: Problem | undefined, field: string): string[] {
  if (!problem?.errors) return []
  const out: string[] = []
  for (const [key, messages] of Object.entries(problem.errors))
    if (key === field || key.startsWith(field + '.')) out.push(...messages)
  return out
}

/** Hands `blob` to the browser as a download named `filename`; the object URL is freed once the download has begun. */
export function downloadBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob)
  const a = document.createElement('a')
  a.href = url
  a.download = filename
  a.click()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

/** The API's timestamps are `YYYY-MM-DD HH:MM:SS` in UTC. */
export function formatTime(value: string | null | undefined): string {
  if (!value) return ''
  const date = new Date(value.replace(' ', 'T') + 'Z')
  if (Number.isNaN(date.getTime())) return value
  return date.toLocaleString(lang.get() === 'de' ? 'de-DE' : 'en-GB', { dateStyle: 'medium', timeStyle: 'short' })
}

// --- session --------------------------------------------------------------------------------------
const SESSION_KEY = 'workplace.session'

export interface Session {
  token: string
  tenant: string
  user: Schemas['CurrentUser']
  permissions: string[]
}

function readSession(): { token: string; tenant: string; owner?: string } | undefined {
  try {
    const raw = localStorage.getItem(SESSION_KEY)
    const saved: unknown = raw ? JSON.parse(raw) : undefined
    return isRecord(saved) && typeof saved.token === 'string' && typeof saved.tenant === 'string'
      ? { token: saved.token, tenant: saved.tenant, owner: textOf(saved.owner) }
      : undefined
  } catch {
    return undefined
  }
}

export const session = store<Session | undefined>(undefined)
/** 'unknown' until the stored token was checked at start. */
export const sessionState = store<'unknown' | 'ready'>('unknown')

export function can(permission: string): boolean {
  const permissions = session.get()?.permissions ?? []
  return permissions.includes('*') || permissions.includes(permission)
}

export async function loadSession(token: string, tenant: string): Promise<Session | undefined> {
  api.useToken(token)
  const { data, response } = await api.GET('/api/users/current', { params: { query: { relations: 'role' } } })
  if (!data) {
    api.useToken(undefined)
    setOwner(undefined)
    return undefined
  }
  // relations=role adds the role, which the generated type of the answer does not name
  const role: unknown = 'role' in data ? data.role : undefined
  const permissions =
    isRecord(role) && Array.isArray(role.permissions)
      ? role.permissions.filter((p): p is string => typeof p === 'string')
      : []
  const next: Session = { token, tenant, user: data, permissions }
  // what is saved for offline reading belongs to this user of this tenant (offline.ts)
  const owner = `${tenant}/${data.id}`
  setOwner({ owner, token })
  keepAnswer(response.url, data)
  signedIn()
  localStorage.setItem(SESSION_KEY, JSON.stringify({ token, tenant, owner }))
  if (!localStorage.getItem(LANG_KEY)) lang.set(langOf(data.lang_id))
  session.set(next)
  return next
}

export async function restoreSession(): Promise<void> {
  const saved = readSession()
  // without a network, the user's saved answer of /api/users/current restores the session
  if (saved?.owner) setOwner({ owner: saved.owner, token: saved.token })
  if (saved) await loadSession(saved.token, saved.tenant).catch(() => undefined)
  sessionState.set('ready')
}

export async function signOut(): Promise<void> {
  await api.POST('/api/auth/logout').catch(() => undefined)
  api.useToken(undefined)
  localStorage.removeItem(SESSION_KEY)
  await forget()
  session.set(undefined)
  navigate('/sign-in')
}

// --- language -------------------------------------------------------------------------------------
export type Lang = 'en' | 'de'
const LANG_KEY = 'workplace.lang'
const catalogues: Record<Lang, Record<MessageKey, string>> = { en, de }

export function langOf(langId: string | null | undefined): Lang {
  return langId?.toLowerCase().startsWith('de') ? 'de' : 'en'
}

function initialLang(): Lang {
  const stored = localStorage.getItem(LANG_KEY)
  if (stored === 'de' || stored === 'en') return stored
  return langOf(navigator.language)
}

export const lang = store<Lang>(initialLang())
lang.subscribe(() => (document.documentElement.lang = lang.get()))
document.documentElement.lang = lang.get()

/** Chosen in the app: remembered on this device and, when signed in, stored as the user's language. */
export async function chooseLang(next: Lang): Promise<void> {
  localStorage.setItem(LANG_KEY, next)
  const current = session.get()
  if (current && langOf(current.user.lang_id) !== next) {
    // stored first, so that the pages shown next get names (folders…) in the new language
    const langId = next === 'de' ? 'de-DE' : 'en-US'
    const { data } = await api.PUT('/api/users/{id}', {
      params: { path: { id: current.user.id! } },
      body: { lang_id: langId },
    })
    if (data) session.set({ ...current, user: { ...current.user, lang_id: langId } })
  }
  lang.set(next)
}

export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  let text: string = catalogues[lang.get()][key] ?? en[key]
  if (vars) for (const [name, value] of Object.entries(vars)) text = text.replaceAll(`{${name}}`, String(value))
  return text
}

// --- router: real URLs under /app, the back button works ---------------------------------------
export const BASE = '/app'
function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname
  return (path || '/') + location.search
}
export const route = store<string>(currentPath())
addEventListener('popstate', () => route.set(currentPath()))

export function navigate(path: string, { replace = false } = {}): void {
  const url = BASE + path
  if (url === location.pathname + location.search) return
  if (replace) history.replaceState(null, '', url)
  else history.pushState(null, '', url)
  route.set(currentPath())
  scrollTo(0, 0)
}

/** Matches `/users/:id` against a path; the params, or undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const [pathname] = path.split('?')
  const a = pattern.split('/').filter(Boolean)
  const b = pathname.split('/').filter(Boolean)
  if (a.length !== b.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(':')) params[a[i].slice(1)] = decodeURIComponent(b[i])
    else if (a[i] !== b[i]) return undefined
  }
  return params
}

export function queryParam(name: string): string | null {
  return new URLSearchParams(route.get().split('?')[1] ?? '').get(name)
}

/** A notification's or a shared item's front-end URL (`/infoboard/posts/63`) as a page of this app. */
export function appPathOf(url: string | undefined): string | undefined {
  if (!url) return undefined
  try {
    const parsed = new URL(url, location.origin)
    if (parsed.origin !== location.origin) return undefined
    const path = parsed.pathname.startsWith(BASE + '/') ? parsed.pathname.slice(BASE.length) : parsed.pathname
    return path + parsed.search
  } catch {
    return undefined
  }
}

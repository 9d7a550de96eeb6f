import { render, type ComponentType } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import './styles.css'
import {
  can,
  chooseLang,
  lang,
  match,
  navigate,
  restoreSession,
  retrying,
  route,
  session,
  sessionState,
  signOut,
  t,
  useStore,
  isOneOf,
  type Lang,
} from './core.ts'
import { startLive, stopLive, unread } from './live.ts'
import { network, pendingWrites } from './offline.ts'

const LANGS: readonly Lang[] = ['en', 'de']
import type { MessageKey } from './messages.ts'
import { Link, Loading, PageTitle } from './ui.tsx'
import { ResetPassword } from './pages/ResetPassword.tsx'
import { SignIn } from './pages/SignIn.tsx'
import { Inbox } from './pages/Inbox.tsx'
import { refreshToConfirm, toConfirm } from './pages/infoboard/to-confirm.ts'

type PageModule = { default: ComponentType<{ params: Record<string, string> }> }

/** A page in its own chunk, loaded when first shown (the inbox's bundle carries none of them). */
function lazy(load: () => Promise<PageModule>): ComponentType<{ params: Record<string, string> }> {
  let loaded: PageModule['default'] | undefined
  return function LazyPage(props) {
    const [page, setPage] = useState(() => loaded)
    useEffect(() => {
      if (!page)
        void load().then((m) => {
          loaded = m.default
          setPage(() => m.default)
        })
    }, [page])
    if (!page) return <Loading />
    const Page = page
    return <Page {...props} />
  }
}

const Content = lazy(() => import('./pages/Content.tsx'))
const ContentItem = lazy(() => import('./pages/ContentItem.tsx'))
const Shared = lazy(() => import('./pages/Shared.tsx'))
const Settings = lazy(() => import('./pages/Settings.tsx'))
const Users = lazy(() => import('./pages/admin/Users.tsx'))
const UserEdit = lazy(() => import('./pages/admin/UserEdit.tsx'))
const UsersImport = lazy(() => import('./pages/admin/UsersImport.tsx'))
const Roles = lazy(() => import('./pages/admin/Roles.tsx'))
const Folders = lazy(() => import('./pages/admin/Folders.tsx'))
const SharedItems = lazy(() => import('./pages/admin/SharedItems.tsx'))
const Automations = lazy(() => import('./pages/admin/Automations.tsx'))
const Audit = lazy(() => import('./pages/admin/Audit.tsx'))
const Send = lazy(() => import('./pages/admin/Send.tsx'))
const Retention = lazy(() => import('./pages/admin/Retention.tsx'))
const DataExports = lazy(() => import('./pages/admin/DataExports.tsx'))
const InfoboardFeed = lazy(() => import('./pages/infoboard/Feed.tsx'))
const InfoboardPost = lazy(() => import('./pages/infoboard/Post.tsx'))
const InfoboardWrite = lazy(() => import('./pages/infoboard/Write.tsx'))
const InfoboardReach = lazy(() => import('./pages/infoboard/Reach.tsx'))

interface RouteDef {
  pattern: string
  page: ComponentType<{ params: Record<string, string> }>
  /** A permission the page needs (any of them); the link is not shown without it. */
  needs?: string[]
  nav?: { key: MessageKey; admin?: boolean }
}

// users.view alone (every employee has it) lists colleagues, it administers nobody
const anyUsers = ['users.create', 'users.update', 'users.delete', 'users.administrate']
const ROUTES: RouteDef[] = [
  { pattern: '/inbox', page: Inbox, nav: { key: 'nav.inbox' } },
  // readers are not gated here: an employee's session may not list her role's permissions; the API decides
  { pattern: '/infoboard', page: InfoboardFeed, nav: { key: 'nav.infoboard' } },
  { pattern: '/infoboard/write', page: InfoboardWrite, needs: ['infoboard.manage'] },
  { pattern: '/infoboard/posts/:id/edit', page: InfoboardWrite, needs: ['infoboard.manage'] },
  { pattern: '/infoboard/posts/:id/reach', page: InfoboardReach, needs: ['infoboard.manage'] },
  { pattern: '/infoboard/posts/:id', page: InfoboardPost },
  { pattern: '/content', page: Content, nav: { key: 'nav.content' } },
  { pattern: '/settings', page: Settings, nav: { key: 'nav.settings' } },
  { pattern: '/shared/:id', page: Shared },
  { pattern: '/admin/users', page: Users, needs: anyUsers, nav: { key: 'nav.users', admin: true } },
  { pattern: '/admin/users/import', page: UsersImport, needs: ['users.administrate'] },
  { pattern: '/admin/users/new', page: UserEdit, needs: ['users.create'] },
  { pattern: '/admin/users/:id', page: UserEdit, needs: anyUsers },
  {
    pattern: '/admin/roles',
    page: Roles,
    needs: ['roles.view', 'departments.manage'],
    nav: { key: 'nav.roles', admin: true },
  },
  {
    pattern: '/admin/folders',
    page: Folders,
    needs: ['entityPermissions.manage'],
    nav: { key: 'nav.folders', admin: true },
  },
  { pattern: '/admin/folders/:id', page: Folders, needs: ['entityPermissions.manage'] },
  {
    pattern: '/admin/shared-items',
    page: SharedItems,
    needs: ['sharedItems.administrate', 'sharedItems.administrateAll'],
    nav: { key: 'nav.sharedItems', admin: true },
  },
  {
    pattern: '/admin/automations',
    page: Automations,
    needs: ['automations.manage'],
    nav: { key: 'nav.automations', admin: true },
  },
  { pattern: '/admin/automations/:id', page: Automations, needs: ['automations.manage'] },
  { pattern: '/admin/audit', page: Audit, needs: ['audit.view'], nav: { key: 'nav.audit', admin: true } },
  { pattern: '/admin/send', page: Send, needs: ['notifications.send'], nav: { key: 'nav.send', admin: true } },
  {
    pattern: '/admin/retention',
    page: Retention,
    needs: ['tenant.administrate'],
    nav: { key: 'nav.retention', admin: true },
  },
  {
    pattern: '/admin/data-exports',
    page: DataExports,
    needs: ['users.export'],
    nav: { key: 'nav.dataExports', admin: true },
  },
  // a notification's URL (`/infoboard/posts/63`) is a page of the app
  { pattern: '/:module/:kind/:id', page: ContentItem },
  { pattern: '/:module/:id', page: ContentItem },
]

const allowed = (r: RouteDef) => !r.needs || r.needs.some(can)

function Nav({ path }: { path: string }) {
  const links = ROUTES.filter((r) => r.nav && allowed(r))
  const section = (admin: boolean) =>
    links
      .filter((r) => !!r.nav!.admin === admin)
      .map((r) => {
        const current = path === r.pattern || path.startsWith(r.pattern + '/')
        return (
          <li key={r.pattern}>
            <Link href={r.pattern} aria-current={current ? 'page' : undefined}>
              {t(r.nav!.key)}
              {r.pattern === '/inbox' && <UnreadBadge />}
              {r.pattern === '/infoboard' && <ToConfirmBadge />}
            </Link>
          </li>
        )
      })
  const adminLinks = section(true)
  return (
    <>
      <nav aria-label={t('app.mainNav')}>
        <ul>{section(false)}</ul>
      </nav>
      {adminLinks.length > 0 && (
        <nav aria-label={t('app.adminNav')}>
          <h2 class="nav-title">{t('app.adminNav')}</h2>
          <ul>{adminLinks}</ul>
        </nav>
      )}
    </>
  )
}

/** A calm note while a request waits to be retried after a 429 (the server's fair-use limits). */
function BusyNote() {
  const seconds = useStore(retrying)
  return (
    <p class="busy-note" role="status" aria-live="polite">
      {seconds === undefined ? '' : t('app.busy', { seconds })}
    </p>
  )
}

/**
 * The offline state, for everyone (a polite live region, empty while online with nothing to send):
 * saved content is shown, marks and confirmations wait in the queue (offline.ts).
 */
function OfflineNote() {
  const state = useStore(network)
  const waiting = useStore(pendingWrites).length
  const text =
    state === 'offline'
      ? [t('offline.note'), waiting ? t('offline.waiting', { count: waiting }) : ''].filter(Boolean).join(' ')
      : waiting
        ? t('offline.sending', { count: waiting })
        : ''
  return (
    <p class={`offline-note${state === 'offline' ? ' is-offline' : ''}`} role="status" aria-live="polite">
      {text}
    </p>
  )
}

export function UnreadBadge() {
  const count = useStore(unread)
  // the badge keeps its place while the count is unknown: no layout shift when it arrives
  return (
    <span class="badge" data-testid="unread-badge" hidden={count === undefined || count === 0}>
      <span aria-hidden="true">{count ?? 0}</span>
      <span class="visually-hidden">{t('inbox.unread', { count: count ?? 0 })}</span>
    </span>
  )
}

/** How many posts the user still has to confirm, next to the Infoboard link. */
export function ToConfirmBadge() {
  const count = useStore(toConfirm)
  const current = useStore(route)
  useEffect(() => refreshToConfirm(), [current])
  return (
    <span class="badge" data-testid="to-confirm-badge" hidden={count === undefined || count === 0}>
      <span aria-hidden="true">{count ?? 0}</span>
      <span class="visually-hidden">{t('infoboard.toConfirmCount', { count: count ?? 0 })}</span>
    </span>
  )
}

export function LanguageSwitch() {
  const current = useStore(lang)
  return (
    <div class="lang">
      <label for="lang-select">{t('app.language')}</label>
      <select
        id="lang-select"
        value={current}
        onChange={(e) => {
          const value = e.currentTarget.value
          if (isOneOf(LANGS, value)) void chooseLang(value)
        }}
      >
        <option value="en" lang="en">
          English
        </option>
        <option value="de" lang="de">
          Deutsch
        </option>
      </select>
    </div>
  )
}

function App() {
  const path = useStore(route).split('?')[0]
  const current = useStore(session)
  const state = useStore(sessionState)
  useStore(lang)
  useEffect(() => {
    if (current) startLive()
    else stopLive()
  }, [current?.token])

  if (state === 'unknown') return <Loading />
  // the page the password-reset email links to: open with or without a session
  if (path === '/reset-password')
    return (
      <div class="signin-layout">
        <header class="signin-header">
          <span class="brand">{t('app.name')}</span>
          <LanguageSwitch />
        </header>
        <main id="main">
          <ResetPassword />
        </main>
      </div>
    )
  if (!current) {
    if (path !== '/sign-in') {
      const next = path === '/' ? '' : `?next=${encodeURIComponent(path)}`
      queueMicrotask(() => navigate(`/sign-in${next}`, { replace: true }))
      return <Loading />
    }
    return (
      <div class="signin-layout">
        <header class="signin-header">
          <span class="brand">{t('app.name')}</span>
          <LanguageSwitch />
        </header>
        <main id="main">
          <SignIn />
        </main>
      </div>
    )
  }
  if (path === '/' || path === '/sign-in') {
    queueMicrotask(() => navigate('/inbox', { replace: true }))
    return <Loading />
  }
  let page = <NotFound />
  for (const r of ROUTES) {
    const params = match(r.pattern, path)
    if (!params) continue
    const Page = r.page
    page = allowed(r) ? <Page params={params} /> : <Forbidden />
    break
  }
  const name = current.user.full_name || current.user.username || ''
  return (
    <div class="layout">
      <a class="skip" href="#main">
        {t('app.skip')}
      </a>
      <header class="top">
        <Link href="/inbox" class="brand">
          {t('app.name')}
        </Link>
        <span class="who">{t('app.signedInAs', { name })}</span>
        <LanguageSwitch />
        <button type="button" class="link-button" onClick={() => void signOut()}>
          {t('app.signOut')}
        </button>
      </header>
      <div class="body">
        <aside class="side">
          <Nav path={path} />
        </aside>
        <main id="main" key={lang.get()}>
          <OfflineNote />
          <BusyNote />
          {page}
        </main>
      </div>
    </div>
  )
}

function NotFound() {
  return (
    <>
      <PageTitle text={t('app.notFound')} />
      <p>
        <Link href="/inbox">{t('nav.inbox')}</Link>
      </p>
    </>
  )
}

function Forbidden() {
  return <PageTitle text={t('app.forbidden')} />
}

if ('serviceWorker' in navigator) {
  // the service worker shows pushes and opens their URL on click, and keeps the app's files for
  // offline use (public/sw.js)
  void navigator.serviceWorker.register('/app/sw.js', { scope: '/app/' }).catch(() => undefined)
}

void restoreSession()
render(<App />, document.getElementById('root')!)

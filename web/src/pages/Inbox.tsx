import { useEffect, useState } from 'preact/hooks'
import {
  api,
  appPathOf,
  asProblem,
  formatTime,
  isRecord,
  navigate,
  t,
  textOf,
  useStore,
  type FilterOf,
  type Problem,
} from '../core.ts'
import { connection, onNotification, unread, type Notification } from '../live.ts'
import { isPending, network, pendingWrites, replayed, wasQueued } from '../offline.ts'
import { Checkbox, Empty, PageTitle, ProblemMessage, Select, useLoad } from '../ui.tsx'

/** The first render of the inbox with data, for the browser tests' measurement (performance mark). */
let measured = false

/** The fields of a notification's `data` the inbox shows (those that are strings). */
function shown(data: unknown): { title?: string; body?: string; url?: string } {
  if (!isRecord(data)) return {}
  return { title: textOf(data.title), body: textOf(data.body), url: textOf(data.url) }
}

function plainText(html: string | undefined): string {
  if (!html) return ''
  return new DOMParser().parseFromString(html, 'text/html').body.textContent ?? ''
}

const now = () => new Date().toISOString()

export function Inbox() {
  const [items, setItems] = useState<Notification[] | undefined>()
  const [types, setTypes] = useState<string[]>([])
  const [type, setType] = useState('')
  const [onlyUnread, setOnlyUnread] = useState(false)
  const [problem, setProblem] = useState<Problem>()
  const count = useStore(unread)
  const live = useStore(connection)
  // marks made offline wait in the queue: shown as read until the server's answer is loaded
  const pending = useStore(pendingWrites)
  const isRead = (n: Notification) => !!n.read_at || isPending(pending, 'PUT', `/api/notifications/${n.id}`)
  // "mark all" is not queued: sent later it would also mark what arrived meanwhile, unseen
  const offline = useStore(network) === 'offline'

  const { reload } = useLoad(
    () => {
      const filter: FilterOf<'/api/notifications'> = {}
      if (type) filter.type = type
      if (onlyUnread) filter.read_at = { null: 'true' }
      return api.GET('/api/notifications', { params: { query: { sort: '-created_at', limit: 50, filter } } })
    },
    [type, onlyUnread],
    {
      // the list is the page's own from here: live records and marks change it in place
      onAnswer: ({ data, problem }) => {
        if (!data) return setProblem(problem)
        setProblem(undefined)
        setItems(data)
        setTypes((known) => [...new Set([...known, ...data.map((n) => n.type ?? '')].filter(Boolean))].sort())
      },
    },
  )

  // queued marks were sent: the server's answer replaces what was shown
  useEffect(
    () =>
      replayed.subscribe(() => {
        reload()
        void refreshCount()
      }),
    [],
  )

  useEffect(() => {
    if (items && !measured) {
      measured = true
      performance.mark('inbox-rendered')
    }
  }, [items])

  // live: a new record appears at the top when it matches the filters
  useEffect(
    () =>
      onNotification((record) => {
        if (type && record.type !== type) return
        setItems((list) => (list && !list.some((n) => n.id === record.id) ? [record, ...list] : list))
        if (record.type) setTypes((known) => (known.includes(record.type!) ? known : [...known, record.type!].sort()))
      }),
    [type],
  )

  const refreshCount = async () => {
    const { data } = await api.GET('/api/notifications/count', {
      params: { query: { filter: { read_at: { null: 'true' } } } },
    })
    if (typeof data === 'number') unread.set(data)
  }

  const markRead = async (n: Notification) => {
    const readAt = now()
    const { error, response } = await api.PUT('/api/notifications/{id}', {
      params: { path: { id: n.id! } },
      body: { read_at: readAt },
    })
    if (error) return setProblem(asProblem(error))
    setItems((list) =>
      onlyUnread
        ? list?.filter((x) => x.id !== n.id)
        : list?.map((x) => (x.id === n.id ? { ...x, read_at: readAt } : x)),
    )
    // queued offline: the count follows locally until the mark is sent
    if (wasQueued(response)) unread.set(Math.max(0, (unread.get() ?? 1) - 1))
    else await refreshCount()
  }

  const markAll = async () => {
    const readAt = now()
    const { error } = await api.PUT('/api/notifications', {
      body: { read_at: readAt, filter: { read_at: { null: true } } },
    })
    if (error) return setProblem(asProblem(error))
    setItems((list) => (onlyUnread ? [] : list?.map((x) => (x.read_at ? x : { ...x, read_at: readAt }))))
    await refreshCount()
  }

  const open = async (n: Notification) => {
    if (!isRead(n)) await markRead(n)
    const { url } = shown(n.data)
    const path = appPathOf(url)
    if (path) navigate(path)
    else if (url) location.assign(url)
  }

  return (
    <section class="inbox" aria-labelledby="inbox-title">
      <div class="page-head">
        <PageTitle text={t('inbox.title')}>
          <span id="inbox-title">{t('inbox.title')}</span>
        </PageTitle>
        <p class="unread-count" role="status" aria-live="polite">
          {count === undefined ? '\u00a0' : t('inbox.unread', { count })}
        </p>
      </div>
      <div class="toolbar">
        <Select
          label={t('inbox.filterType')}
          name="type"
          value={type}
          onValue={setType}
          options={[['', t('inbox.allTypes')], ...types.map((x): [string, string] => [x, x])]}
        />
        <Checkbox label={t('inbox.onlyUnread')} checked={onlyUnread} onChange={setOnlyUnread} />
        <button type="button" onClick={() => void markAll()} disabled={!count || offline}>
          {t('inbox.markAllRead')}
        </button>
        <span class={`live live-${live}`}>{live === 'open' ? t('inbox.live') : t('inbox.offline')}</span>
      </div>
      <ProblemMessage problem={problem} />
      {items === undefined ? (
        <ul class="notifications" aria-busy="true" aria-label={t('app.loading')}>
          {[0, 1, 2, 3].map((i) => (
            <li key={i} class="notification skeleton" aria-hidden="true" />
          ))}
        </ul>
      ) : items.length === 0 ? (
        <Empty text={t('inbox.empty')} />
      ) : (
        <ul class="notifications" aria-label={t('inbox.title')}>
          {items.map((n) => {
            const data = shown(n.data)
            const title = data.title ?? n.type ?? ''
            return (
              <li key={n.id} class={`notification ${isRead(n) ? 'read' : 'unread'}`}>
                <div class="n-main">
                  <h2 class="n-title">
                    <a
                      href={data.url ? `/app${appPathOf(data.url) ?? ''}` : '#'}
                      onClick={(e) => {
                        e.preventDefault()
                        void open(n)
                      }}
                    >
                      {!isRead(n) && <span class="visually-hidden">{t('inbox.new')}: </span>}
                      {title}
                    </a>
                  </h2>
                  <p class="n-body">{plainText(data.body)}</p>
                  <p class="n-meta">
                    <span>{n.type}</span> · <time dateTime={n.created_at}>{formatTime(n.created_at)}</time>
                  </p>
                </div>
                {!isRead(n) && (
                  <button
                    type="button"
                    class="small"
                    onClick={() => void markRead(n)}
                    aria-label={`${t('inbox.markRead')}: ${title}`}
                  >
                    {t('inbox.markRead')}
                  </button>
                )}
              </li>
            )
          })}
        </ul>
      )}
    </section>
  )
}

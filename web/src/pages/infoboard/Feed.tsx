import { useState } from 'preact/hooks'
import { api, can, formatTime, t, useStore } from '../../core.ts'
import { pendingWrites } from '../../offline.ts'
import { Link, LoadState, PageTitle, Select, useLoad } from '../../ui.tsx'
import { confirmationPending } from './to-confirm.ts'

/** The employee's channel feed (pinned first), the "to confirm" list, and for editors the drafts and scheduled posts. */
export default function Feed() {
  const [channel, setChannel] = useState('')
  const editor = can('infoboard.manage')
  const channels = useLoad(
    () => api.GET('/api/folders', { params: { query: { filter: { type: 'infoboardChannel' }, sort: 'id' } } }),
    [],
  )
  const toConfirm = useLoad(
    () => api.GET('/api/infoboard/posts', { params: { query: { filter: { confirmation: 'pending' }, limit: 100 } } }),
    [],
  )
  const feed = useLoad(
    () =>
      api.GET('/api/infoboard/posts', {
        params: {
          query: {
            limit: 50,
            filter: {
              published_at: { lte: new Date().toISOString().slice(0, 19).replace('T', ' ') },
              ...(channel ? { channel_id: channel } : {}),
            },
          },
        },
      }),
    [channel],
  )
  const unpublished = useLoad(
    () =>
      editor
        ? api.GET('/api/infoboard/posts', {
            params: {
              query: {
                limit: 100,
                sort: '-id',
                filter: { published_at: { gt: new Date().toISOString().slice(0, 19).replace('T', ' ') } },
              },
            },
          })
        : Promise.resolve({ data: [] }),
    [],
  )
  const drafts = useLoad(
    () =>
      editor
        ? api.GET('/api/infoboard/posts', {
            params: { query: { limit: 100, sort: '-id', filter: { published_at: { null: 'true' } } } },
          })
        : Promise.resolve({ data: [] }),
    [],
  )
  // a confirmation made offline waits in the queue: the post is not listed as still to confirm
  useStore(pendingWrites)
  const channelName = (id: number | null | undefined) => channels.data?.find((c) => c.id === id)?.name ?? ''

  return (
    <>
      <PageTitle text={t('infoboard.title')} />
      {editor && (
        <p>
          <Link href="/infoboard/write" class="button primary">
            {t('infoboard.write')}
          </Link>
        </p>
      )}
      <section aria-labelledby="h-to-confirm">
        <h2 id="h-to-confirm">{t('infoboard.toConfirm')}</h2>
        <LoadState loaded={toConfirm} empty={t('infoboard.nothingToConfirm')}>
          {(list) => (
            <ul class="items" aria-label={t('infoboard.toConfirm')}>
              {list
                .filter((p) => !confirmationPending(p.id))
                .map((p) => (
                  <li key={p.id}>
                    <Link href={`/infoboard/posts/${p.id}`}>{p.title}</Link>{' '}
                    {p.confirmation_due_at && (
                      <span class="meta">{t('infoboard.dueAt', { time: formatTime(p.confirmation_due_at) })}</span>
                    )}
                  </li>
                ))}
            </ul>
          )}
        </LoadState>
      </section>
      <section aria-labelledby="h-feed">
        <h2 id="h-feed">{t('infoboard.feed')}</h2>
        <Select
          label={t('infoboard.channel')}
          name="channel"
          value={channel}
          onValue={setChannel}
          options={[
            ['', t('infoboard.allChannels')],
            ...(channels.data ?? []).map((c): [string, string] => [String(c.id), c.name ?? '']),
          ]}
        />
        <LoadState loaded={feed} empty={t('app.empty')}>
          {(list) => (
            <ul class="items feed">
              {list.map((p) => (
                <li key={p.id} class={p.pinned ? 'pinned' : undefined}>
                  {p.pinned && <span class="tag">{t('infoboard.pinned')}</span>}{' '}
                  <Link href={`/infoboard/posts/${p.id}`}>{p.title}</Link>{' '}
                  <span class="meta">
                    {channelName(p.channel_id)} · {formatTime(p.published_at)}
                    {p.requires_reading_confirmation &&
                      ` · ${p.my_state?.confirmed_at ? t('infoboard.confirmed') : t('infoboard.confirmationRequired')}`}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </LoadState>
      </section>
      {editor && (
        <section aria-labelledby="h-unpublished">
          <h2 id="h-unpublished">{t('infoboard.draftsAndScheduled')}</h2>
          <LoadState loaded={drafts} empty={t('infoboard.noDrafts')}>
            {(list) => (
              <ul class="items">
                {list.map((p) => (
                  <li key={p.id}>
                    <span class="tag">{t('infoboard.draft')}</span>{' '}
                    <Link href={`/infoboard/posts/${p.id}/edit`}>{p.title}</Link>
                  </li>
                ))}
              </ul>
            )}
          </LoadState>
          <LoadState loaded={unpublished} empty={t('infoboard.noScheduled')}>
            {(list) => (
              <ul class="items" aria-label={t('infoboard.scheduled')}>
                {list.map((p) => (
                  <li key={p.id}>
                    <span class="tag">{t('infoboard.scheduled')}</span>{' '}
                    <Link href={`/infoboard/posts/${p.id}/edit`}>{p.title}</Link>{' '}
                    <span class="meta">{t('infoboard.publishesAt', { time: formatTime(p.published_at) })}</span>
                  </li>
                ))}
              </ul>
            )}
          </LoadState>
        </section>
      )}
    </>
  )
}

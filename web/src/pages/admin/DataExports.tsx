import { useState } from 'preact/hooks'
import { api, asProblem, can, formatTime, lang, queryParam, t, type Problem, type Schemas } from '../../core.ts'
import type { MessageKey } from '../../messages.ts'
import { DataTable, Link, LoadState, PageTitle, ProblemMessage, useLoad } from '../../ui.tsx'

type Row = Schemas['DataExport'] & { person: string }

const STATUS: Record<NonNullable<Row['status']>, MessageKey> = {
  pending: 'exports.status.pending',
  ready: 'exports.status.ready',
  failed: 'exports.status.failed',
  expired: 'exports.status.expired',
}

const LIMIT = 100

/** Bytes as people read them: "840 bytes", "12.3 kB", "4.1 MB" (decimal units, in the app's language). */
function formatSize(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return '—'
  const units = ['byte', 'kilobyte', 'megabyte', 'gigabyte'] as const
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000
    unit++
  }
  return new Intl.NumberFormat(lang.get() === 'de' ? 'de-DE' : 'en-GB', {
    style: 'unit',
    unit: units[unit],
    unitDisplay: unit === 0 ? 'long' : 'short',
    maximumFractionDigits: unit === 0 ? 0 : 1,
  }).format(value)
}

/**
 * The people's names by id, in one request for the whole page (two for user administrators: a deleted
 * person is only in /api/users/deleted). Names are a courtesy: a list that cannot be named still shows.
 */
async function namesOf(ids: number[]): Promise<Map<number, string>> {
  const names = new Map<number, string>()
  if (ids.length === 0) return names
  const query = { filter: { id: { in: ids.map(String) } }, selects: 'id,first_name,last_name,username' }
  const lists = [api.GET('/api/users', { params: { query } })]
  if (can('users.administrate')) lists.push(api.GET('/api/users/deleted', { params: { query } }))
  for (const { data } of await Promise.all(lists))
    for (const u of data ?? [])
      if (u.id !== undefined)
        names.set(u.id, [u.first_name, u.last_name].filter(Boolean).join(' ') || (u.username ?? ''))
  return names
}

async function loadExports(userId: number | undefined): Promise<{ data?: Row[]; error?: unknown }> {
  const { data, error } = await api.GET('/api/data-exports', {
    params: {
      query: { limit: LIMIT, ...(userId !== undefined ? { filter: { user_id: String(userId) } } : {}) },
    },
  })
  if (!data) return { error }
  const names = await namesOf([...new Set(data.flatMap((e) => (e.user_id === undefined ? [] : [e.user_id])))])
  const person = (id: number | undefined) => names.get(id ?? -1) || t('exports.unknownUser', { id: id ?? '' })
  return { data: data.map((e) => ({ ...e, person: person(e.user_id) })) }
}

/** Personal-data exports of the tenant (users.export): who, status, size, dates; a single-use download. */
export default function DataExports() {
  const user = Number(queryParam('user')) || undefined
  const [problem, setProblem] = useState<Problem>()
  const exports = useLoad(() => loadExports(user), [user])

  const download = async (id: number) => {
    setProblem(undefined)
    const { data, error } = await api.POST('/api/data-exports/{id}/download-link', { params: { path: { id } } })
    if (!data) return setProblem(asProblem(error))
    // the link works once and without a token: the browser downloads the ZIP, the page stays
    window.location.assign(data.data.url)
  }

  const person = user !== undefined ? exports.data?.[0]?.person : undefined
  return (
    <>
      <PageTitle text={t('exports.title')} />
      <p>{t('exports.intro')}</p>
      {user !== undefined && (
        <p>
          {person ? t('exports.onlyOf', { name: person }) : t('exports.onlyOne')}{' '}
          <Link href="/admin/data-exports">{t('exports.showAll')}</Link>
        </p>
      )}
      <div class="toolbar">
        <button type="button" onClick={exports.reload}>
          {t('exports.refresh')}
        </button>
      </div>
      <ProblemMessage problem={problem} />
      <div aria-busy={exports.loading ? 'true' : undefined}>
        <LoadState loaded={exports} empty={user !== undefined ? t('exports.emptyOne') : t('exports.empty')}>
          {(list) => (
            <DataTable
              class="data"
              caption={t('exports.title')}
              columns={[
                t('exports.person'),
                t('exports.status'),
                t('exports.size'),
                t('exports.requested'),
                t('exports.readyAt'),
                t('exports.deletedOn'),
                t('app.actions'),
              ]}
            >
              {list.map((e) => (
                <tr key={e.id}>
                  <th scope="row">{e.person}</th>
                  <td class="export-status">{t(STATUS[e.status ?? 'pending'])}</td>
                  <td>{formatSize(e.size)}</td>
                  <td>{formatTime(e.created_at)}</td>
                  <td>{formatTime(e.ready_at) || '—'}</td>
                  <td>{formatTime(e.expires_at) || '—'}</td>
                  <td>
                    {e.status === 'ready' && e.id !== undefined && (
                      <button
                        type="button"
                        class="small"
                        aria-label={t('exports.downloadOf', { name: e.person, time: formatTime(e.created_at) })}
                        onClick={() => void download(e.id!)}
                      >
                        {t('exports.download')}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </LoadState>
      </div>
    </>
  )
}

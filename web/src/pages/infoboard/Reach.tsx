import { useState } from 'preact/hooks'
import { api, asProblem, can, downloadBlob, formatTime, t, type Problem } from '../../core.ts'
import { DataTable, Link, Loading, LoadState, PageTitle, ProblemMessage, Status, useLoad } from '../../ui.tsx'

function Progress({ label, value, max }: { label: string; value: number; max: number }) {
  const percent = max === 0 ? 0 : Math.round((value / max) * 100)
  return (
    <div class="progress-row">
      <span class="progress-label">
        {label}: {t('infoboard.ofAudience', { value, max, percent })}
      </span>
      <progress max={max || 1} value={value} aria-label={label}>
        {percent}%
      </progress>
    </div>
  )
}

/** The sender's view: seen and confirmed as progress bars, by department, the pending people, "Remind pending", CSV. */
export default function Reach({ params }: { params: Record<string, string> }) {
  const id = Number(params.id)
  const post = useLoad(() => api.GET('/api/infoboard/posts/{id}', { params: { path: { id } } }), [id])
  const reach = useLoad(() => api.GET('/api/infoboard/posts/{id}/reach', { params: { path: { id } } }), [id])
  const named = can('infoboard.reach') && reach.data?.reach_detail === 'named'
  const pending = useLoad(
    () =>
      named
        ? api.GET('/api/infoboard/posts/{id}/reach/users', {
            params: { path: { id }, query: { filter: { state: 'pending' }, limit: 200 } },
          })
        : Promise.resolve({ data: [] }),
    [id, named],
  )
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()

  const remind = async () => {
    const { data, error } = await api.POST('/api/infoboard/posts/{id}/reminders', { params: { path: { id } } })
    if (!data) return setProblem(asProblem(error))
    setProblem(undefined)
    setStatus(t('infoboard.reminded', { count: data.recipients }))
    pending.reload()
  }
  const exportCsv = async () => {
    const { data, error } = await api.GET('/api/infoboard/posts/{id}/reach/users', {
      params: { path: { id } },
      headers: { accept: 'text/csv' },
      parseAs: 'blob',
    })
    if (!data) return setProblem(asProblem(error))
    downloadBlob(data, `reach-${id}.csv`)
  }

  if (reach.loading) return <Loading />
  if (!reach.data)
    return (
      <>
        <PageTitle text={t('infoboard.reach')} />
        <ProblemMessage problem={reach.problem} />
      </>
    )
  const r = reach.data
  return (
    <>
      <PageTitle text={t('infoboard.reachOf', { title: post.data?.title ?? '' })} />
      <p>{t('infoboard.audience', { count: r.audience })}</p>
      <Progress label={t('infoboard.seen')} value={r.seen} max={r.audience} />
      {r.requires_reading_confirmation && (
        <Progress label={t('infoboard.confirmedLabel')} value={r.confirmed} max={r.audience} />
      )}
      <section aria-labelledby="h-departments">
        <h2 id="h-departments">{t('infoboard.byDepartment')}</h2>
        {r.by_department.length === 0 ? (
          <p>{t('app.empty')}</p>
        ) : (
          <DataTable
            columns={[
              t('infoboard.department'),
              t('infoboard.audienceShort'),
              t('infoboard.seen'),
              t('infoboard.confirmedLabel'),
              t('infoboard.pending'),
            ]}
          >
            {r.by_department.map((d) => (
              <tr key={d.id}>
                <th scope="row">{d.name}</th>
                <td>{d.audience}</td>
                <td>{d.seen}</td>
                <td>{d.confirmed}</td>
                <td>{d.pending}</td>
              </tr>
            ))}
          </DataTable>
        )}
        {r.reach_detail === 'counts_only' && <p class="hint">{t('infoboard.countsOnly')}</p>}
      </section>
      <section aria-labelledby="h-pending">
        <h2 id="h-pending">{t('infoboard.pendingPeople', { count: r.pending })}</h2>
        {r.requires_reading_confirmation && (
          <button type="button" class="primary" onClick={() => void remind()}>
            {t('infoboard.remindPending')}
          </button>
        )}{' '}
        {named && (
          <button type="button" onClick={() => void exportCsv()}>
            {t('infoboard.exportCsv')}
          </button>
        )}
        <Status text={status} />
        <ProblemMessage problem={problem} />
        {named && (
          <LoadState loaded={pending} empty={t('infoboard.nobodyPending')}>
            {(list) => (
              <ul class="items" aria-label={t('infoboard.pending')}>
                {list.map((u) => (
                  <li key={u.id}>
                    {`${u.first_name ?? ''} ${u.last_name ?? ''}`.trim() || u.username}{' '}
                    <span class="meta">
                      {[
                        u.role,
                        u.departments,
                        u.reminded_at && t('infoboard.remindedAt', { time: formatTime(u.reminded_at) }),
                      ]
                        .filter(Boolean)
                        .join(' · ')}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </LoadState>
        )}
      </section>
      <p>
        <Link href={`/infoboard/posts/${id}`}>{t('app.back')}</Link>
      </p>
    </>
  )
}

import { useState } from 'preact/hooks'
import { api, asProblem, downloadBlob, formatTime, t, type FilterOf, type Problem } from '../../core.ts'
import { DataTable, Field, LoadState, PageTitle, ProblemMessage, useLoad } from '../../ui.tsx'

export default function Audit() {
  const [action, setAction] = useState('')
  const [actor, setActor] = useState('')
  const [since, setSince] = useState('')
  const [filter, setFilter] = useState<FilterOf<'/api/administration/audit-log'>>({})
  const [problem, setProblem] = useState<Problem>()
  const log = useLoad(
    () =>
      api.GET('/api/administration/audit-log', {
        params: { query: { sort: '-id', limit: 100, filter } },
      }),
    [filter],
  )

  const apply = (e: Event) => {
    e.preventDefault()
    const next: FilterOf<'/api/administration/audit-log'> = {}
    if (action) next.action = { like: action }
    if (actor) next.actor_id = actor
    if (since) next.created_at = { gte: since }
    setFilter(next)
  }
  const exportCsv = async () => {
    const { data, error } = await api.GET('/api/administration/audit-log', {
      params: { query: { sort: '-id', filter } },
      headers: { accept: 'text/csv' },
      parseAs: 'blob',
    })
    if (!data) return setProblem(asProblem(error))
    downloadBlob(data, 'audit-log.csv')
  }
  const problemOf = problem ?? log.problem
  return (
    <>
      <PageTitle text={t('audit.title')} />
      <form class="toolbar filters" onSubmit={apply}>
        <Field
          label={t('audit.action')}
          name="action"
          value={action}
          onValue={setAction}
          problem={problemOf}
          field="filter.action"
        />
        <Field
          label={t('audit.actor')}
          name="actor_id"
          value={actor}
          onValue={setActor}
          problem={problemOf}
          field="filter.actor_id"
          inputMode="numeric"
        />
        <Field
          label={t('audit.since')}
          name="created_at"
          type="date"
          value={since}
          onValue={setSince}
          problem={problemOf}
          field="filter.created_at"
        />
        <button type="submit">{t('audit.filter')}</button>
        <button type="button" onClick={() => void exportCsv()}>
          {t('audit.export')}
        </button>
      </form>
      <ProblemMessage problem={problem} />
      <LoadState loaded={log}>
        {(list) => (
          <DataTable
            class="data"
            caption={t('audit.title')}
            columns={[t('app.created'), t('audit.action'), t('audit.actor'), t('audit.target'), t('audit.changes')]}
          >
            {list.map((r) => (
              <tr key={r.id}>
                <td>{formatTime(r.created_at)}</td>
                <td>{r.action}</td>
                <td>{r.actor_id ?? '—'}</td>
                <td>
                  {r.target_type} {r.target_id}
                </td>
                <td>
                  <code class="changes">{Object.keys(r.changes ?? {}).join(', ')}</code>
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </LoadState>
    </>
  )
}

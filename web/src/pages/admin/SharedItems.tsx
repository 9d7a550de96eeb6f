import { useState } from 'preact/hooks'
import { api, asProblem, formatTime, isOneOf, t, type Problem } from '../../core.ts'

const REDIRECT_TYPES = ['redirect', 'redirectWithGrantToken', 'none'] as const
import { DataTable, Field, LoadState, PageTitle, ProblemMessage, Select, Status, useLoad } from '../../ui.tsx'

const TYPES = [
  'infoboardPost',
  'calendarEvent',
  'manualEntry',
  'filemanagerFile',
  'filemanagerDirectory',
  'form',
  'taskExecution',
]

export default function SharedItems() {
  const [showDeleted, setShowDeleted] = useState(false)
  const items = useLoad(
    () =>
      api.GET('/api/administration/shared-items', {
        params: {
          query: {
            sort: '-created_at',
            limit: 100,
            filter: showDeleted ? { deleted_at: { null: 'false' } } : {},
          },
        },
      }),
    [showDeleted],
  )
  const [type, setType] = useState(TYPES[0])
  const [targetId, setTargetId] = useState('')
  const [redirect, setRedirect] = useState('redirect')
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()

  const create = async (event: Event) => {
    event.preventDefault()
    const { error } = await api.POST('/api/administration/shared-items', {
      body: {
        type,
        targetable_type: type,
        targetable_id: /^\d+$/.test(targetId) ? Number(targetId) : targetId,
        redirect_type: isOneOf(REDIRECT_TYPES, redirect) ? redirect : 'redirect',
      },
    })
    if (error) return setProblem(asProblem(error))
    setProblem(undefined)
    setTargetId('')
    setStatus(t('app.saved'))
    items.reload()
  }
  const copy = async (url: string) => {
    try {
      await navigator.clipboard.writeText(url)
    } catch {
      // the URL is visible in the table all the same
    }
    setStatus(t('shared.copied'))
  }
  const restore = async (id: string) => {
    const { error } = await api.POST('/api/administration/shared-items/{id}/restore', { params: { path: { id } } })
    if (error) return setProblem(asProblem(error))
    items.reload()
  }
  const remove = async (id: string) => {
    const { error } = await api.DELETE('/api/administration/shared-items/{id}', { params: { path: { id } } })
    if (error) return setProblem(asProblem(error))
    items.reload()
  }

  return (
    <>
      <PageTitle text={t('shared.title')} />
      <form class="card" onSubmit={(e) => void create(e)} aria-labelledby="h-new-shared">
        <h2 id="h-new-shared">{t('shared.new')}</h2>
        <ProblemMessage problem={problem} fields={['type', 'targetable_id', 'targetable_type', 'redirect_type']} />
        <Select
          label={t('shared.type')}
          name="type"
          value={type}
          onValue={setType}
          options={TYPES.map((x): [string, string] => [x, x])}
          problem={problem}
        />
        <Field
          label={t('shared.targetId')}
          name="targetable_id"
          value={targetId}
          onValue={setTargetId}
          problem={problem}
          required
        />
        <Select
          label={t('shared.redirect')}
          name="redirect_type"
          value={redirect}
          onValue={setRedirect}
          options={[
            ['redirect', 'redirect'],
            ['redirectWithGrantToken', 'redirectWithGrantToken'],
            ['none', 'none'],
          ]}
          problem={problem}
        />
        <button type="submit">{t('app.create')}</button>
      </form>
      <Status text={status} />
      <label class="check">
        <input type="checkbox" checked={showDeleted} onChange={(e) => setShowDeleted(e.currentTarget.checked)} />
        {t('shared.onlyDeleted')}
      </label>
      <LoadState loaded={items}>
        {(list) => (
          <DataTable
            class="data"
            caption={t('shared.title')}
            columns={[t('shared.type'), t('shared.target'), t('shared.url'), t('app.created'), t('app.actions')]}
          >
            {list.map((s) => (
              <tr key={s.id}>
                <td>{s.type}</td>
                <td>
                  {s.targetable_type} {s.targetable_id} {s.deleted_at && <span class="tag">{t('shared.deleted')}</span>}
                </td>
                <td>
                  <code class="url">{s.url}</code>
                </td>
                <td>{formatTime(s.created_at)}</td>
                <td class="actions">
                  <button
                    type="button"
                    class="small"
                    onClick={() => void copy(s.url ?? '')}
                    aria-label={`${t('shared.copy')}: ${s.type} ${s.targetable_id}`}
                  >
                    {t('shared.copy')}
                  </button>
                  {s.deleted_at ? (
                    <button
                      type="button"
                      class="small"
                      onClick={() => void restore(s.id!)}
                      aria-label={`${t('shared.restore')}: ${s.type} ${s.targetable_id}`}
                    >
                      {t('shared.restore')}
                    </button>
                  ) : (
                    <button
                      type="button"
                      class="small danger"
                      onClick={() => void remove(s.id!)}
                      aria-label={`${t('app.delete')}: ${s.type} ${s.targetable_id}`}
                    >
                      {t('app.delete')}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </LoadState>
    </>
  )
}

import { useState } from 'preact/hooks'
import { api, asProblem, t, type Problem } from '../../core.ts'
import { isMessageKey } from '../../messages.ts'
import { DataTable, Field, Loading, PageTitle, ProblemMessage, Status, useLoad } from '../../ui.tsx'

/** The answer of GET/PUT /api/administration/retention, by class key (the server may add classes). */
type Settings = {
  periods: Record<string, number>
  defaults: Record<string, number>
  maximums: Record<string, number | null>
}
/** A class's input as typed, or null: "Use default" was pressed (sent as null). */
type Edits = Record<string, string | null>

/** A class's label or description from messages.ts; a class the app does not know yet is shown by its key. */
function classText(kind: 'class' | 'about', key: string): string | undefined {
  const messageKey = `retention.${kind}.${key}`
  return isMessageKey(messageKey) ? t(messageKey) : undefined
}
const label = (key: string) => classText('class', key) ?? key

function SweepPreview() {
  const [removed, setRemoved] = useState<Record<string, number>>()
  const [problem, setProblem] = useState<Problem>()
  const preview = async () => {
    setProblem(undefined)
    const { data, error } = await api.POST('/api/administration/retention/sweep', {
      params: { query: { dry_run: true } },
    })
    if (!data) return setProblem(asProblem(error))
    setRemoved(data.data.removed)
  }
  const total = removed ? Object.values(removed).reduce((a, b) => a + b, 0) : 0
  return (
    <section aria-labelledby="h-sweep" class="card">
      <h2 id="h-sweep">{t('retention.previewTitle')}</h2>
      <p class="hint">{t('retention.previewHint')}</p>
      <button type="button" onClick={() => void preview()}>
        {t('retention.preview')}
      </button>
      <ProblemMessage problem={problem} />
      <Status text={removed && t('retention.previewDone', { count: total })} />
      {removed && (
        <DataTable
          class="data"
          caption={t('retention.previewCaption')}
          showCaption
          columns={[t('retention.dataClass'), t('retention.entries')]}
        >
          {Object.entries(removed).map(([key, count]) => (
            <tr key={key}>
              <th scope="row">{label(key)}</th>
              <td>{count}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  )
}

/** Retention periods per data class (tenant.administrate): set, back to the default, and a dry run of the sweep. */
export default function Retention() {
  const loaded = useLoad<Settings>(
    () => api.GET('/api/administration/retention').then(({ data, error }) => ({ data: data?.data, error })),
    [],
  )
  const settings = loaded.data
  const [edits, setEdits] = useState<Edits>({})
  const [saveProblem, setProblem] = useState<Problem>()
  const problem = saveProblem ?? loaded.problem
  const [status, setStatus] = useState<string>()

  const save = async (event: Event) => {
    event.preventDefault()
    if (!settings) return
    setStatus(undefined)
    // only what changed: a class not sent keeps its period; null puts it back to the default
    const body: Record<string, number | null> = {}
    const invalid: Record<string, string[]> = {}
    for (const [key, edit] of Object.entries(edits)) {
      if (edit === null) body[key] = null
      else if (!/^\d+$/.test(edit.trim())) invalid[key] = [t('retention.wholeDays')]
      else if (Number(edit) !== settings.periods[key]) body[key] = Number(edit)
    }
    if (Object.keys(invalid).length > 0) return setProblem({ detail: t('retention.invalid'), errors: invalid })
    if (Object.keys(body).length === 0) {
      setProblem(undefined)
      return setStatus(t('retention.noChanges'))
    }
    const { data, error } = await api.PUT('/api/administration/retention', { body })
    if (!data) return setProblem(asProblem(error))
    setProblem(undefined)
    loaded.setData(data.data)
    setEdits({})
    setStatus(t('app.saved'))
  }

  const keys = settings ? Object.keys(settings.periods) : []
  return (
    <>
      <PageTitle text={t('retention.title')} />
      <p>{t('retention.intro')}</p>
      <ProblemMessage problem={problem} fields={keys} />
      {!settings ? (
        !problem && <Loading />
      ) : (
        <form class="card" onSubmit={(e) => void save(e)} noValidate>
          {keys.map((key) => {
            const edit = edits[key]
            const maximum = settings.maximums[key] ?? null
            const hint = [
              classText('about', key),
              t('retention.default', { days: settings.defaults[key] }),
              maximum !== null ? t('retention.maximum', { days: maximum }) : '',
            ]
            return (
              <Field
                key={key}
                label={label(key)}
                name={key}
                type="number"
                inputMode="numeric"
                min={1}
                max={maximum ?? undefined}
                value={edit === null ? String(settings.defaults[key]) : (edit ?? String(settings.periods[key]))}
                onValue={(value) => setEdits((e) => ({ ...e, [key]: value }))}
                problem={problem}
                hint={hint.filter(Boolean).join(' ')}
                after={
                  <button
                    type="button"
                    class="small"
                    aria-label={t('retention.useDefaultFor', { name: label(key) })}
                    onClick={() => setEdits((e) => ({ ...e, [key]: null }))}
                  >
                    {t('retention.useDefault')}
                  </button>
                }
              />
            )
          })}
          <button type="submit" class="primary">
            {t('app.save')}
          </button>
        </form>
      )}
      <Status text={status} />
      {settings && <SweepPreview />}
    </>
  )
}

import { useState } from 'preact/hooks'
import { api, asProblem, t, type Problem } from '../../core.ts'
import { Checkbox, DataTable, Link, PageTitle, ProblemMessage, Status } from '../../ui.tsx'

type Preview = { new_users: Array<Record<string, unknown>>; update_users: Array<Record<string, unknown>> }
type NewUserRow = Record<string, unknown> & { username: string; password: string; role_id: number }

/** A dry run's new user as POST /api/users takes it: the server fills username, password and role of every row. */
const isNewUserRow = (row: Record<string, unknown>): row is NewUserRow =>
  typeof row.username === 'string' && typeof row.password === 'string' && typeof row.role_id === 'number'

/** `rows.<line>.<key>` errors of the dry run, by line. */
function rowErrors(problem: Problem | undefined) {
  const rows: Array<{ line: number; field: string; messages: string[] }> = []
  for (const [key, messages] of Object.entries(problem?.errors ?? {})) {
    const m = /^rows\.(\d+)(?:\.(.+))?$/.exec(key)
    if (m) rows.push({ line: Number(m[1]), field: m[2] ?? '', messages })
  }
  return rows.sort((a, b) => a.line - b.line)
}

export default function UsersImport() {
  const [file, setFile] = useState<File>()
  const [update, setUpdate] = useState(false)
  const [problem, setProblem] = useState<Problem>()
  const [preview, setPreview] = useState<Preview>()
  const [status, setStatus] = useState<string>()
  const [busy, setBusy] = useState(false)

  const check = async (event: Event) => {
    event.preventDefault()
    setPreview(undefined)
    setStatus(undefined)
    setBusy(true)
    const { data, error } = await api.POST('/api/users/csv', {
      body: { user_data_csv: file!, update_users: update },
      bodySerializer: (body) => {
        const form = new FormData()
        // the file itself (the generated type says string, format binary)
        if (file) form.append('user_data_csv', file)
        form.append('update_users', String(body.update_users === true))
        return form
      },
    })
    setBusy(false)
    if (!data) return setProblem(asProblem(error))
    setProblem(undefined)
    setPreview(data.data)
  }

  const commit = async () => {
    if (!preview) return
    setBusy(true)
    let done = 0
    for (const user of preview.new_users.filter(isNewUserRow)) {
      const { error } = await api.POST('/api/users', { body: user })
      if (error) {
        setBusy(false)
        return setProblem(asProblem(error))
      }
      done++
    }
    for (const { id, ...changes } of preview.update_users) {
      const { error } = await api.PUT('/api/users/{id}', {
        params: { path: { id: Number(id) } },
        body: changes,
      })
      if (error) {
        setBusy(false)
        return setProblem(asProblem(error))
      }
      done++
    }
    setBusy(false)
    setPreview(undefined)
    setStatus(t('import.done', { count: done }))
  }

  const rows = rowErrors(problem)
  const total = preview ? preview.new_users.length + preview.update_users.length : 0
  return (
    <>
      <p>
        <Link href="/admin/users">{t('app.back')}</Link>
      </p>
      <PageTitle text={t('import.title')} />
      <form class="card" onSubmit={(e) => void check(e)}>
        <div class="field">
          <label for="csv-file">{t('import.file')}</label>
          <input
            id="csv-file"
            type="file"
            accept=".csv,text/csv"
            required
            aria-invalid={problem?.errors?.user_data_csv ? 'true' : undefined}
            aria-describedby={problem?.errors?.user_data_csv ? 'csv-file-err' : undefined}
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
          {problem?.errors?.user_data_csv && (
            <p class="field-error" id="csv-file-err">
              {problem.errors.user_data_csv.join(' ')}
            </p>
          )}
        </div>
        <Checkbox label={t('import.update')} checked={update} onChange={setUpdate} />
        <button type="submit" class="primary" disabled={busy || !file}>
          {t('import.preview')}
        </button>
      </form>
      <ProblemMessage
        problem={problem && rows.length === 0 ? problem : problem && { ...problem, errors: {} }}
        fields={['user_data_csv']}
      />
      {rows.length > 0 && (
        <DataTable
          class="data row-errors"
          caption={t('import.rowErrors')}
          showCaption
          columns={[t('import.row', { line: '' }).trim(), t('import.field'), t('import.problem')]}
        >
          {rows.map((r) => (
            <tr key={`${r.line}.${r.field}`}>
              <th scope="row">{t('import.row', { line: r.line })}</th>
              <td>
                <code>{r.field}</code>
              </td>
              <td>{r.messages.join('; ')}</td>
            </tr>
          ))}
        </DataTable>
      )}
      {preview && (
        <section aria-labelledby="h-preview">
          <h2 id="h-preview">{t('import.previewTitle')}</h2>
          <p>
            {t('import.newUsers', { count: preview.new_users.length })} ·{' '}
            {t('import.updateUsers', { count: preview.update_users.length })}
          </p>
          <DataTable
            class="data"
            caption={t('import.previewTitle')}
            columns={[t('users.username'), t('users.firstName'), t('users.lastName')]}
          >
            {[...preview.new_users, ...preview.update_users].map((u) => (
              <tr key={String(u.username ?? u.id)}>
                <td>{String(u.username ?? '')}</td>
                <td>{String(u.first_name ?? '')}</td>
                <td>{String(u.last_name ?? '')}</td>
              </tr>
            ))}
          </DataTable>
          <button type="button" class="primary" disabled={busy || total === 0} onClick={() => void commit()}>
            {t('import.confirm', { count: total })}
          </button>
        </section>
      )}
      <Status text={status} />
    </>
  )
}

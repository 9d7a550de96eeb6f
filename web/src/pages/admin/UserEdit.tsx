import { useState } from 'preact/hooks'
import { api, asProblem, can, isRecord, navigate, t, type Problem, type Schemas } from '../../core.ts'
import { Checkbox, Field, Link, Loading, PageTitle, ProblemMessage, Select, Status, useLoad } from '../../ui.tsx'

type Form = {
  username: string
  first_name: string
  last_name: string
  email: string
  password: string
  role_id: string
  lang_id: string
  active: boolean
}
/** A new user as the form holds it: POST /api/users requires a password and a role the form may not have yet. */
type UserDraft = Pick<Schemas['UserCreate'], 'username' | 'first_name' | 'last_name' | 'email' | 'lang_id' | 'active'> &
  Partial<Pick<Schemas['UserCreate'], 'password' | 'role_id'>>
const FIELDS = [
  'username',
  'first_name',
  'last_name',
  'email',
  'password',
  'role_id',
  'lang_id',
  'active',
  'profile_picture',
]

/** The picture needs the bearer token: fetched through the client, shown from an object URL. */
function Picture({ userId, version }: { userId: number; version: string }) {
  const picture = useLoad(
    async () => {
      const { data, error } = await api.GET('/users/{id}/profile-picture', {
        params: { path: { id: userId } },
        parseAs: 'blob',
      })
      return { data: data && URL.createObjectURL(data), error }
    },
    [userId, version],
    { release: (url) => URL.revokeObjectURL(url) },
  )
  return picture.data ? <img src={picture.data} alt={t('users.picture')} width={96} height={96} /> : null
}

export default function UserEdit({ params }: { params: Record<string, string> }) {
  const isNew = !params.id
  const id = Number(params.id)
  const [form, setForm] = useState<Form>({
    username: '',
    first_name: '',
    last_name: '',
    email: '',
    password: '',
    role_id: '',
    lang_id: 'en-US',
    active: true,
  })
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()
  const [exportRequested, setExportRequested] = useState(false)
  // a page opened on a user waits for it; one that created a user stays while it loads
  const [openedNew] = useState(isNew)

  const roles = useLoad(() => api.GET('/api/roles', { params: { query: { sort: 'name' } } }), [params.id], {
    onAnswer: ({ data }) => {
      const last = data?.[data.length - 1]
      if (isNew && last) setForm((f) => ({ ...f, role_id: f.role_id || String(last.id) }))
    },
  })
  const roleOptions = (roles.data ?? []).map((r): [string, string] => [String(r.id), r.name ?? ''])
  const loaded = useLoad(() => api.GET('/api/users/{id}', { params: { path: { id } } }), [params.id], {
    when: !isNew,
    onAnswer: ({ data, problem }) => {
      if (!data) return setProblem(problem)
      setForm({
        username: data.username ?? '',
        first_name: data.first_name ?? '',
        last_name: data.last_name ?? '',
        email: data.email ?? '',
        password: '',
        role_id: String(data.role_id ?? ''),
        lang_id: data.lang_id ?? 'en-US',
        active: data.active ?? true,
      })
    },
  })
  const user = loaded.data

  const set = (key: keyof Form) => (value: string) => setForm((f) => ({ ...f, [key]: value }))

  const save = async (event: Event) => {
    event.preventDefault()
    setStatus(undefined)
    const body: UserDraft = {
      username: form.username,
      first_name: form.first_name,
      last_name: form.last_name,
      email: form.email || null,
      role_id: form.role_id ? Number(form.role_id) : undefined,
      lang_id: form.lang_id,
      active: form.active,
      ...(form.password ? { password: form.password } : {}),
    }
    const result = isNew
      ? await api.POST('/api/users', {
          // what is sent is the draft as typed in, so a missing password or role is named by the server's 422
          // (sending password: '' would not be); the typed body fills them only to satisfy the client's type
          body: { ...body, password: body.password ?? '', role_id: body.role_id ?? 0 },
          bodySerializer: () => JSON.stringify(body),
        })
      : await api.PUT('/api/users/{id}', { params: { path: { id } }, body })
    if (result.error) return setProblem(asProblem(result.error))
    setProblem(undefined)
    setStatus(t('app.saved'))
    const saved: unknown = result.data
    if (isNew && isRecord(saved) && typeof saved.id === 'number' && saved.id)
      navigate(`/admin/users/${saved.id}`, { replace: true })
  }

  const act = async (action: 'logout' | 'delete' | 'restore') => {
    setStatus(undefined)
    const path = { params: { path: { id } } }
    const result =
      action === 'logout'
        ? await api.POST('/api/users/logout/{id}', path)
        : action === 'delete'
          ? await api.DELETE('/api/users/{id}', path)
          : await api.POST('/api/users/restore/{id}', { ...path, body: {} })
    if (result.error) return setProblem(asProblem(result.error))
    setProblem(undefined)
    if (action === 'delete') return navigate('/admin/users')
    setStatus(action === 'logout' ? t('users.loggedOut') : t('app.saved'))
    if (action === 'restore' && user) loaded.setData({ ...user, deleted_at: null })
  }

  /** Asks for an archive of this person's data (users.export); it is built in the background. */
  const exportData = async () => {
    setStatus(undefined)
    setExportRequested(false)
    const { error } = await api.POST('/api/users/{id}/data-export', { params: { path: { id } } })
    if (error) return setProblem(asProblem(error))
    setProblem(undefined)
    setExportRequested(true)
  }

  const upload = async (file: File | undefined) => {
    if (!file) return
    const { error } = await api.PUT('/api/users/{id}', {
      params: { path: { id } },
      body: { profile_picture: file },
      bodySerializer: () => {
        const form = new FormData()
        form.append('profile_picture', file)
        return form
      },
    })
    if (error) return setProblem(asProblem(error))
    const fresh = await api.GET('/api/users/{id}', { params: { path: { id } } })
    if (fresh.data) loaded.setData(fresh.data)
    setStatus(t('app.saved'))
  }

  if (!openedNew && !user && !loaded.problem) return <Loading />
  const title = isNew ? t('users.new') : t('users.edit', { name: user?.username ?? '' })
  return (
    <>
      <p>
        <Link href="/admin/users">{t('app.back')}</Link>
      </p>
      <PageTitle text={title} />
      <ProblemMessage problem={problem} fields={FIELDS} />
      <form onSubmit={(e) => void save(e)} class="card">
        <Field
          label={t('users.username')}
          name="username"
          value={form.username}
          onValue={set('username')}
          problem={problem}
          required
        />
        <Field
          label={t('users.firstName')}
          name="first_name"
          value={form.first_name}
          onValue={set('first_name')}
          problem={problem}
        />
        <Field
          label={t('users.lastName')}
          name="last_name"
          value={form.last_name}
          onValue={set('last_name')}
          problem={problem}
        />
        <Field
          label={t('users.email')}
          name="email"
          type="email"
          value={form.email}
          onValue={set('email')}
          problem={problem}
        />
        <Field
          label={t('users.password')}
          name="password"
          type="password"
          value={form.password}
          onValue={set('password')}
          problem={problem}
          autocomplete="new-password"
        />
        <Select
          label={t('users.role')}
          name="role_id"
          value={form.role_id}
          onValue={set('role_id')}
          options={roleOptions}
          problem={problem}
        />
        <Select
          label={t('users.language')}
          name="lang_id"
          value={form.lang_id}
          onValue={set('lang_id')}
          options={[
            ['en-US', 'English'],
            ['de-DE', 'Deutsch'],
          ]}
          problem={problem}
        />
        <Checkbox
          label={t('users.active')}
          checked={form.active}
          onChange={(active) => setForm((f) => ({ ...f, active }))}
        />
        <button type="submit" class="primary">
          {isNew ? t('app.create') : t('app.save')}
        </button>
      </form>
      <Status text={status} />
      {!isNew && user && (
        <section aria-labelledby="h-user-actions">
          <h2 id="h-user-actions">{t('app.actions')}</h2>
          {user.profile_picture && <Picture userId={id} version={user.profile_picture} />}
          {can('users.update') && (
            <div class="field">
              <label for="picture">{t('users.uploadPicture')}</label>
              <input
                id="picture"
                type="file"
                accept="image/*"
                onChange={(e) => void upload(e.currentTarget.files?.[0])}
              />
            </div>
          )}
          <div class="toolbar">
            {can('users.administrate') && (
              <button type="button" onClick={() => void act('logout')}>
                {t('users.logout')}
              </button>
            )}
            {user.deleted_at
              ? can('users.administrate') && (
                  <button type="button" onClick={() => void act('restore')}>
                    {t('users.restore')}
                  </button>
                )
              : can('users.delete') && (
                  <button
                    type="button"
                    class="danger"
                    onClick={() =>
                      confirm(t('users.confirmDelete', { name: user.username ?? '' })) && void act('delete')
                    }
                  >
                    {t('app.delete')}
                  </button>
                )}
            {can('users.export') && !user.blacked_out_at && (
              <button type="button" onClick={() => void exportData()}>
                {t('users.exportData')}
              </button>
            )}
          </div>
          {can('users.export') && (
            <p class="status" role="status" aria-live="polite">
              {exportRequested && (
                <>
                  {t('users.exportRequested')}{' '}
                  <Link href={`/admin/data-exports?user=${id}`}>{t('users.exportOpen')}</Link>
                </>
              )}
            </p>
          )}
        </section>
      )}
    </>
  )
}

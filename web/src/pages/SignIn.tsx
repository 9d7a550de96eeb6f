import { useState } from 'preact/hooks'
import { api, asProblem, loadSession, navigate, queryParam, t, type Problem } from '../core.ts'
import { Field, PageTitle, ProblemMessage } from '../ui.tsx'

const TENANT_KEY = 'workplace.tenant'

export function SignIn() {
  const [tenant, setTenant] = useState(() => localStorage.getItem(TENANT_KEY) ?? '')
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [problem, setProblem] = useState<Problem>()
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setProblem(undefined)
    try {
      const { data, error } = await api.POST('/api/auth/login', {
        body: { tenant, username, password, device_name: 'Web app' },
      })
      if (!data) {
        setProblem(asProblem(error))
        return
      }
      localStorage.setItem(TENANT_KEY, tenant)
      await loadSession(data.access_token, tenant)
      const next = queryParam('next')
      navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/inbox', { replace: true })
    } catch (error) {
      setProblem(asProblem(error))
    } finally {
      setBusy(false)
    }
  }

  return (
    <form class="card signin" onSubmit={(e) => void submit(e)} noValidate={false}>
      <PageTitle text={t('signIn.title')} />
      <ProblemMessage problem={problem} fields={['tenant', 'username', 'password']} />
      <Field
        label={t('signIn.tenant')}
        name="tenant"
        value={tenant}
        onValue={setTenant}
        problem={problem}
        required
        autocomplete="organization"
      />
      <Field
        label={t('signIn.username')}
        name="username"
        value={username}
        onValue={setUsername}
        problem={problem}
        required
        autocomplete="username"
      />
      <Field
        label={t('signIn.password')}
        name="password"
        type="password"
        value={password}
        onValue={setPassword}
        problem={problem}
        required
        autocomplete="current-password"
      />
      <button type="submit" class="primary" disabled={busy}>
        {t('signIn.submit')}
      </button>
    </form>
  )
}

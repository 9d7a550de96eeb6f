import { useState } from 'preact/hooks'
import { api, asProblem, queryParam, t, type Problem } from '../core.ts'
import { Field, Link, PageTitle, ProblemMessage, Status } from '../ui.tsx'

/**
 * The page the password-reset email links to (`APP_URL/reset-password?token=…`): a new password
 * for the account of the one-use token (`POST /api/auth/password-reset/confirm`).
 */
export function ResetPassword() {
  const [token] = useState(() => queryParam('token') ?? '')
  const [password, setPassword] = useState('')
  const [problem, setProblem] = useState<Problem>()
  const [busy, setBusy] = useState(false)
  const [done, setDone] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setProblem(undefined)
    try {
      const { error, response } = await api.POST('/api/auth/password-reset/confirm', { body: { token, password } })
      if (response.status === 204) setDone(true)
      else setProblem(asProblem(error))
    } catch (error) {
      setProblem(asProblem(error))
    } finally {
      setBusy(false)
    }
  }

  if (done)
    return (
      <div class="card signin">
        <PageTitle text={t('reset.title')} />
        <Status text={t('reset.done')} />
        <Link href="/sign-in">{t('signIn.title')}</Link>
      </div>
    )
  return (
    <form class="card signin" onSubmit={(e) => void submit(e)}>
      <PageTitle text={t('reset.title')} />
      <ProblemMessage problem={problem} fields={['token', 'password']} />
      <Field
        label={t('reset.password')}
        name="password"
        type="password"
        value={password}
        onValue={setPassword}
        problem={problem}
        required
        autocomplete="new-password"
      />
      <button type="submit" class="primary" disabled={busy || !token}>
        {t('reset.submit')}
      </button>
    </form>
  )
}

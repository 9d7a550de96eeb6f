import { useEffect, useState } from 'preact/hooks'
import type { paths } from '../../../clients/typescript/index.ts'
import { api, asProblem, BASE, isRecord, loadSession, navigate, queryParam, t, textOf, type Problem } from '../core.ts'
import { Field, Loading, PageTitle, ProblemMessage, useLoad } from '../ui.tsx'

type LoginBody = paths['/api/auth/login']['post']['requestBody']['content']['application/json']

const TENANT_KEY = 'workplace.tenant'
const NEXT_KEY = 'workplace.next'

/** Marks a single sign-on this tab started: only then is a returning login code redeemed (login CSRF, issue 39). */
const SSO_STARTED_KEY = 'workplace.sso_started'
const SSO_MARKER_MS = 10 * 60 * 1000

/** Where single sign-on returns with `#login_code=…` (must lie under the server's APP_URL). */
const ssoReturn = () => `${location.origin}${BASE}/sign-in`

/**
 * The login code the provider's round trip brought back in the URL fragment, taken out of the URL at
 * once; undefined unless this tab started that sign-in (a code planted by someone else is dropped).
 */
function takeLoginCode(): string | undefined {
  const code = new URLSearchParams(location.hash.slice(1)).get('login_code')
  if (!code) return undefined
  history.replaceState(null, '', location.pathname + location.search)
  const started = Number(sessionStorage.getItem(SSO_STARTED_KEY))
  sessionStorage.removeItem(SSO_STARTED_KEY)
  return started > 0 && Date.now() - started < SSO_MARKER_MS ? code : undefined
}

export function SignIn() {
  const [tenant, setTenant] = useState(() => localStorage.getItem(TENANT_KEY) ?? '')
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [totp, setTotp] = useState('')
  const [mfaToken, setMfaToken] = useState<string>()
  const [problem, setProblem] = useState<Problem>()
  const [busy, setBusy] = useState(false)
  const [loginCode] = useState(takeLoginCode)

  const finish = async (accessToken: string, tenantSlug: string) => {
    localStorage.setItem(TENANT_KEY, tenantSlug)
    await loadSession(accessToken, tenantSlug)
    const next = queryParam('next') ?? sessionStorage.getItem(NEXT_KEY)
    sessionStorage.removeItem(NEXT_KEY)
    navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/inbox', { replace: true })
  }

  const login = async (body: LoginBody, tenantSlug: string) => {
    setBusy(true)
    setProblem(undefined)
    try {
      const { data, error } = await api.POST('/api/auth/login', { body })
      if (data) return await finish(data.access_token, tenantSlug)
      const p = asProblem(error)
      // the problem's mfa_token (mfa_required) is not in the documented error body: read from the parsed answer
      const answer: unknown = error
      const mfaToken = isRecord(answer) ? textOf(answer.mfa_token) : undefined
      if (p.code === 'mfa_required' && mfaToken) {
        setMfaToken(mfaToken)
        return
      }
      setProblem(p)
    } catch (error) {
      setProblem(asProblem(error))
    } finally {
      setBusy(false)
    }
  }

  // back from the identity provider: exchange the one-use login code for a token
  useEffect(() => {
    if (loginCode) void login({ login_code: loginCode, device_name: 'Web app' }, tenant)
  }, [loginCode])

  // the SSO button is offered when the tenant has single sign-on (its start answers with a redirect)
  const slug = tenant.trim()
  const ssoProbe = useLoad(
    async () => {
      const { response } = await api.GET('/api/auth/oidc/{tenant}/start', {
        params: { path: { tenant: slug }, query: { redirect_uri: ssoReturn() } },
        redirect: 'manual',
      })
      return { data: response.type === 'opaqueredirect' }
    },
    [tenant],
    { when: /^[a-z0-9][a-z0-9-]*$/i.test(slug), delay: 400 },
  )
  // hidden while the typed tenant is being probed
  const sso = ssoProbe.data === true && !ssoProbe.loading ? slug : undefined

  const submit = (event: Event) => {
    event.preventDefault()
    if (mfaToken) void login({ mfa_token: mfaToken, totp }, tenant)
    else void login({ tenant, username, password, device_name: 'Web app' }, tenant)
  }

  const startSso = () => {
    localStorage.setItem(TENANT_KEY, sso!)
    sessionStorage.setItem(SSO_STARTED_KEY, String(Date.now()))
    const next = queryParam('next')
    if (next) sessionStorage.setItem(NEXT_KEY, next)
    const query = new URLSearchParams({ redirect_uri: ssoReturn() })
    location.assign(`/api/auth/oidc/${encodeURIComponent(sso!)}/start?${query}`)
  }

  if (loginCode && busy) return <Loading />
  return (
    <form class="card signin" onSubmit={submit}>
      <PageTitle text={t('signIn.title')} />
      <ProblemMessage problem={problem} fields={['tenant', 'username', 'password', 'totp']} />
      {mfaToken ? (
        <Field
          label={t('signIn.totp')}
          name="totp"
          value={totp}
          onValue={setTotp}
          problem={problem}
          required
          inputMode="numeric"
          autocomplete="one-time-code"
        />
      ) : (
        <>
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
        </>
      )}
      <button type="submit" class="primary" disabled={busy}>
        {t('signIn.submit')}
      </button>
      {sso && !mfaToken && (
        <button type="button" class="sso" onClick={startSso}>
          {t('signIn.sso')}
        </button>
      )}
    </form>
  )
}

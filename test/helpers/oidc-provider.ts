import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'

export interface TestAccount {
  sub: string
  preferred_username?: string
  email?: string
  given_name?: string
  family_name?: string
  /** Default true. */
  email_verified?: boolean
  /** Authentication methods the provider reports in the ID token (`amr`). */
  amr?: string[]
}

export interface TestProvider {
  issuer: string
  clientId: string
  clientSecret: string
  /** Accounts by `sub`; the login form takes the sub as its login. */
  accounts: Map<string, TestAccount>
  /** How often the discovery document was fetched. */
  discoveryFetches(): number
  close(): Promise<void>
}

/**
 * A real OpenID provider (`oidc-provider`) on 127.0.0.1 with one confidential client whose redirect
 * URI is `redirectUri`; its development login and consent pages are completed by `signInAt`.
 */
export async function startOidcProvider(redirectUri: string): Promise<TestProvider> {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const accounts = new Map<string, TestAccount>()
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const clientId = 'workplace-test'
  const clientSecret = 'provider-client-secret-0123456789'
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'test-key' }] },
    cookies: { keys: ['test-cookie-key-0123456789'] },
    claims: {
      openid: ['sub', 'amr'],
      profile: ['preferred_username', 'given_name', 'family_name'],
      email: ['email', 'email_verified'],
    },
    // (the default) profile and email claims are not in the ID token: the API asks the userinfo endpoint
    conformIdTokenClaims: true,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    findAccount: async (_ctx, sub) => {
      const account = accounts.get(sub)
      if (!account) return undefined
      const { amr: _amr, ...claims } = account
      return { accountId: sub, claims: async () => ({ ...claims, email_verified: account.email_verified ?? true }) }
    },
  })
  // the development login records no authentication methods: an account's `amr` is put on its session
  const session = provider.Session.prototype as unknown as {
    loginAccount(this: unknown, details: { accountId: string; amr?: string[] }): unknown
  }
  const loginAccount = session.loginAccount
  session.loginAccount = function (details) {
    return loginAccount.call(this, { ...details, amr: accounts.get(details.accountId)?.amr ?? details.amr })
  }
  const handle = provider.callback()
  let discoveries = 0
  server.on('request', (request, response) => {
    if (request.url?.startsWith('/.well-known/openid-configuration')) discoveries++
    void handle(request, response)
  })
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    discoveryFetches: () => discoveries,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * Completes the provider's login (as `sub`) and consent over HTTP, starting at the authorization URL
 * our API redirected to; returns the URL the provider redirects back to (our callback with code and state).
 */
export async function signInAt(authorizationUrl: string, sub: string, callbackPrefix: string): Promise<URL> {
  const cookies = new Map<string, string>()
  const remember = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const index = pair!.indexOf('=')
      cookies.set(pair!.slice(0, index).trim(), pair!.slice(index + 1))
    }
  }
  const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  let url = new URL(authorizationUrl)
  for (let hops = 0; hops < 20; hops++) {
    if (url.toString().startsWith(callbackPrefix)) return url
    if (url.pathname.startsWith('/interaction/')) {
      const page = await fetch(url, { headers: { cookie: cookieHeader() }, redirect: 'manual' })
      remember(page)
      const html = await page.text()
      const prompt =
        /name="prompt" value="(\w+)"/.exec(html)?.[1] ?? (html.includes('name="login"') ? 'login' : 'consent')
      const form = new URLSearchParams({ prompt, login: sub, password: 'any' })
      const submitted = await fetch(url, {
        method: 'POST',
        body: form,
        headers: { cookie: cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
        redirect: 'manual',
      })
      remember(submitted)
      const next = submitted.headers.get('location')
      if (!next) throw new Error(`the interaction answered ${submitted.status}: ${await submitted.text()}`)
      url = new URL(next, url)
      continue
    }
    const response = await fetch(url, { headers: { cookie: cookieHeader() }, redirect: 'manual' })
    remember(response)
    const next = response.headers.get('location')
    if (!next) throw new Error(`${url} answered ${response.status} without a redirect: ${await response.text()}`)
    url = new URL(next, url)
  }
  throw new Error('too many redirects at the provider')
}

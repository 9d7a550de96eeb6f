/**
 * The run-wide secrets grep (issue 17): every secret a test sends in a JSON request body — a
 * `password`, a `secret`, a private key, an auth header's `value` — is remembered for the rest of the
 * test file, and every later response of the test app (headers and body) is searched for all of them.
 * A response that carries one fails the request that received it (see `buildTestApp`).
 */

const SECRET_KEY = /password|secret|private/i
const MIN_LENGTH = 8

/** Secrets sent so far by this test process. */
const sent = new Set<string>()

/** Remembers the secrets of a JSON request body (string or object). */
export function rememberSecrets(payload: unknown): void {
  let body = payload
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body)
    } catch {
      return
    }
  }
  // bounded: a test may send a body nested thousands of levels deep (the API refuses it, issue 39)
  const walk = (value: unknown, key: string, parent: string, depth: number) => {
    if (depth > 100) return
    if (typeof value === 'string') {
      const secret = SECRET_KEY.test(key) || (key === 'value' && parent === 'header')
      if (secret && value.length >= MIN_LENGTH) sent.add(value)
    } else if (Array.isArray(value)) value.forEach((item) => walk(item, key, parent, depth + 1))
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, k, key, depth + 1)
  }
  walk(body, '', '', 0)
}

/** The remembered secrets a response (its headers and body) contains. */
export function echoedSecrets(response: { headers: Record<string, unknown>; body: string }): string[] {
  if (sent.size === 0) return []
  const text = `${JSON.stringify(response.headers)}\n${response.body}`
  return [...sent].filter((secret) => text.includes(secret))
}

/** Forgets every remembered secret (the helper's own test). */
export function forgetSecrets(): void {
  sent.clear()
}

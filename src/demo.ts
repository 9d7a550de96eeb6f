import FormData from 'form-data'
import type { Config } from './config.js'
import type { Db } from './platform/db/schema.js'
import { withSessionLock } from './platform/db/session-lock.js'
import { buildApp } from './app.js'
import { ensureDemoTenant, type DemoRequest, type DemoResult } from './modules/tenants/index.js'

/**
 * `workplace demo` and the first `serve`: builds the app in-process (never listening) so that the demo
 * is created through the same routes, validation, access rules and side effects as any client's data.
 * One process at a time (a session lock on `directUrl`): nodes of a fleet started together on an empty
 * database would otherwise each create it, or take another's demo in the making for a half-made one.
 */
export async function runDemo(
  config: Config,
  { db, directUrl }: { db: Db; directUrl: string },
  { reset = false } = {},
): Promise<DemoResult> {
  return withSessionLock(directUrl, 'workplace:demo-tenant', () => createDemo(config, db, reset))
}

async function createDemo(config: Config, db: Db, reset: boolean): Promise<DemoResult> {
  const app = await buildApp({ config: { ...config, auth: { ...config.auth, actorCache: false } }, db, logger: false })
  try {
    const api: DemoRequest = async ({ method, url, token, payload, files }) => {
      let body: string | object | undefined =
        typeof payload === 'string' || (typeof payload === 'object' && payload !== null) ? payload : undefined
      let headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
      if (files) {
        const form = new FormData()
        for (const [key, value] of Object.entries((payload ?? {}) as Record<string, unknown>))
          form.append(key, String(value))
        for (const [field, file] of Object.entries(files)) form.append(field, file.bytes, { filename: file.name })
        body = form.getBuffer()
        headers = { ...headers, ...form.getHeaders() }
      }
      const response = await app.inject({ method, url, headers, payload: body })
      if (response.statusCode >= 300)
        throw new Error(`demo: ${method} ${url} answered ${response.statusCode}: ${response.body}`)
      return response.body ? response.json() : undefined
    }
    return await ensureDemoTenant(db, { tokenTtlDays: config.auth.tokenTtlDays, api, reset })
  } finally {
    await app.close()
  }
}

import type { FastifyInstance, RouteOptions } from 'fastify'
import { buildApp } from '../../../src/app.js'
import { LOAD_TEST_LIMITS, testConfig } from '../../helpers/build-test-app.js'
import { testDb } from '../../helpers/test-database.js'

export interface RegisteredRoute {
  method: string
  url: string
}

/** Builds the app on the test database and records every route it registers (HEAD/OPTIONS are Fastify's own). */
export async function appWithRouteTable(
  overrides: Record<string, string> = {},
): Promise<{ app: FastifyInstance; routes: RegisteredRoute[] }> {
  const routes: RegisteredRoute[] = []
  const onRoute = (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      if (method === 'HEAD' || method === 'OPTIONS') continue
      routes.push({ method, url: route.url })
    }
  }
  // the route sweep's requests are no tenant's fair use (docs/limits.md): raised limits unless overridden
  const app = await buildApp({ config: testConfig({ ...LOAD_TEST_LIMITS, ...overrides }), db: testDb(), onRoute })
  await app.ready()
  return { app, routes }
}

export const routeKey = (route: RegisteredRoute) => `${route.method} ${route.url}`

/** Whether the OpenAPI document of `app` lists a path (`{id}` form) with a method. */
export async function openApiHas(app: FastifyInstance, method: string, path: string): Promise<boolean> {
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as {
    paths: Record<string, Record<string, unknown>>
  }
  return Boolean(doc.paths[path]?.[method.toLowerCase()])
}

import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { Config } from '../../config.js'

/** OpenAPI is generated from the route schemas; `/docs` renders it from locally served assets. */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'workplace-api',
        version: '0.1.0',
        description: 'Multi-tenant workplace platform API. Errors are RFC 9457 problem+json. Obtain a token with POST /api/auth/login.',
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Opaque access token (wp_…)' } },
      },
      security: [{ bearer: [] }],
    },
    transform: ({ schema, url, route }) => {
      const publicRoute = (route as { config?: { public?: boolean } }).config?.public
      const transformed = { ...(schema ?? {}) } as Record<string, unknown>
      if (publicRoute) transformed.security = []
      return { schema: transformed as typeof schema, url }
    },
  })
  // the docs page and its assets are public; everything else authenticates
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config ?? {}), public: true }
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: true,
    logLevel: 'warn',
  })
  let document: unknown
  app.get('/api/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => (document ??= finishDocument(app.swagger())))
}

type Parameter = { in: string; schema?: Record<string, unknown>; style?: string; explode?: boolean }
type Document = { paths?: Record<string, Record<string, { parameters?: Parameter[] }>> }

/** Serialization keywords a query schema declares (`filter`: deepObject) move onto its parameter. */
function finishDocument<T>(doc: T): T {
  for (const operations of Object.values((doc as Document).paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const parameter of operation.parameters ?? []) {
        const schema = parameter.schema
        if (!schema || parameter.in !== 'query') continue
        if (typeof schema.style === 'string') parameter.style = schema.style
        if (typeof schema.explode === 'boolean') parameter.explode = schema.explode
        delete schema.style
        delete schema.explode
      }
    }
  }
  return doc
}

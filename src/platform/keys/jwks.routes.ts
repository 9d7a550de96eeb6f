import type { App } from '../app-module.js'
import { Type } from 'typebox'
import type { Db } from '../db/schema.js'
import type { SecretBox } from '../secrets/secret-box.js'
import { errorResponses } from '../http/schemas.js'
import { publicJwks } from './signing-keys.js'

const JwkSchema = Type.Object({
  kty: Type.String(),
  crv: Type.String(),
  x: Type.String(),
  y: Type.String(),
  kid: Type.String(),
  alg: Type.String(),
  use: Type.String(),
})

/** `GET /.well-known/jwks.json`: public keys receivers use to verify our JWTs (unauthenticated). */
export async function jwksRoutes(app: App, { db, secrets }: { db: Db; secrets: SecretBox }): Promise<void> {
  app.get(
    '/.well-known/jwks.json',
    {
      config: { public: true },
      schema: { tags: ['keys'], response: { 200: Type.Object({ keys: Type.Array(JwkSchema) }), ...errorResponses } },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300')
      return publicJwks(db, secrets)
    },
  )
}

import { createHash, createHmac, randomUUID } from 'node:crypto'
import { SignJWT } from 'jose'
import type { SigningKey } from '../../platform/keys/signing-keys.js'
import type { WebhookAuth } from './webhook-config.js'

export interface SigningContext {
  url: string
  method: string
  body: Buffer
  webhookId: string
  /** Unix seconds of this attempt (the `webhook-timestamp` header). */
  timestamp: number
  tenantSlug: string
  issuer: string
  signingKey: () => Promise<SigningKey>
}

/** JWT lifetime: long enough for clock skew and a slow network, short enough to limit replay. */
const JWT_TTL_SECONDS = 300

/** Standard Webhooks `v1` signature of `<id>.<timestamp>.<body>`; `whsec_` secrets are base64, others raw UTF-8. */
export function standardWebhookSignature(secret: string, webhookId: string, timestamp: number, body: Buffer): string {
  const key = secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8')
  const mac = createHmac('sha256', key).update(`${webhookId}.${timestamp}.`).update(body).digest('base64')
  return `v1,${mac}`
}

/** The ES256 bearer token of `jwt` auth; `body_sha256` binds it to the exact body bytes. */
export async function webhookJwt(ctx: SigningContext): Promise<string> {
  const key = await ctx.signingKey()
  const url = new URL(ctx.url)
  return new SignJWT({
    webhook_id: ctx.webhookId,
    body_sha256: createHash('sha256').update(ctx.body).digest('base64url'),
    htm: ctx.method,
    htu: `${url.origin}${url.pathname}`,
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(ctx.issuer)
    .setAudience(url.origin)
    .setSubject(`tenant:${ctx.tenantSlug}`)
    .setIssuedAt(ctx.timestamp)
    .setExpirationTime(ctx.timestamp + JWT_TTL_SECONDS)
    .setJti(randomUUID())
    .sign(key.privateKey)
}

/** The header(s) one auth mode adds to a delivery. */
export async function authHeaders(auth: WebhookAuth | null, ctx: SigningContext): Promise<Record<string, string>> {
  switch (auth?.type ?? null) {
    case 'basic':
      return {
        authorization: `Basic ${Buffer.from(`${auth!.basic!.username}:${auth!.basic!.password}`, 'utf8').toString('base64')}`,
      }
    case 'header':
      return { [auth!.header!.name]: auth!.header!.value }
    case 'jwt':
      return { authorization: `Bearer ${await webhookJwt(ctx)}` }
    case 'secret':
      return {
        'webhook-signature': standardWebhookSignature(auth!.secret!.secret, ctx.webhookId, ctx.timestamp, ctx.body),
      }
    default:
      return {}
  }
}

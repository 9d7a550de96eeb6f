import { createECDH, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { importJWK, jwtVerify, type JWTPayload } from 'jose'

/** A browser's side of a subscription: its key pair and auth secret (what `PushManager.subscribe` makes). */
export interface UserAgentKeys {
  ecdh: ReturnType<typeof createECDH>
  p256dh: string
  auth: string
  authSecret: Buffer
}

export function userAgentKeys(): UserAgentKeys {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  const authSecret = randomBytes(16)
  return { ecdh, p256dh: ecdh.getPublicKey().toString('base64url'), auth: authSecret.toString('base64url'), authSecret }
}

/**
 * RFC 8291 (`aes128gcm`, RFC 8188 framing): what a browser does with a push message body. Header: salt
 * (16), record size (4), key id length (1), key id = the application server's ephemeral public key.
 */
export function decryptPushBody(body: Buffer, keys: UserAgentKeys): string {
  const salt = body.subarray(0, 16)
  const idLength = body[20]
  const serverPublicKey = body.subarray(21, 21 + idLength)
  const ciphertext = body.subarray(21 + idLength)
  const shared = keys.ecdh.computeSecret(serverPublicKey)
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), keys.ecdh.getPublicKey(), serverPublicKey])
  const ikm = Buffer.from(hkdfSync('sha256', shared, keys.authSecret, keyInfo, 32))
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16))
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12))
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16))
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()])
  // the last record ends with the delimiter 0x02, then zero padding
  const end = padded.lastIndexOf(2)
  return padded.subarray(0, end).toString('utf8')
}

/** RFC 8292: `Authorization: vapid t=<JWT>, k=<public key>`; the JWT is ES256 by the key the API publishes. */
export async function verifyVapid(
  authorization: string | undefined,
  expectedPublicKey: string,
  audience: string,
): Promise<JWTPayload> {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '')
  if (!match) throw new Error(`not a VAPID authorization: ${authorization}`)
  if (match[2] !== expectedPublicKey) throw new Error('k= is not the public key the API publishes')
  const point = Buffer.from(expectedPublicKey, 'base64url')
  const key = await importJWK(
    {
      kty: 'EC',
      crv: 'P-256',
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33).toString('base64url'),
    },
    'ES256',
  )
  const { payload } = await jwtVerify(match[1], key, { audience, algorithms: ['ES256'] })
  return payload
}

export interface ReceivedPush {
  path: string
  headers: http.IncomingHttpHeaders
  body: Buffer
}

/** A push service on 127.0.0.1: records each message; `answer` decides the status (default 201). */
export async function startPushService(
  answer: (push: ReceivedPush, index: number) => { status: number; headers?: Record<string, string> } = () => ({
    status: 201,
  }),
) {
  const received: ReceivedPush[] = []
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const push = { path: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks) }
      received.push(push)
      const { status, headers } = answer(push, received.length - 1)
      response.writeHead(status, headers).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    received,
    endpoint: (name: string) => `${origin}/push/${name}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { instrumentTestApp } from '../../../test/helpers/build-test-app.js'
import { echoedSecrets, forgetSecrets, rememberSecrets } from '../../../test/helpers/secret-echo.js'

// the run-wide secrets grep that every buildTestApp() app applies to every response (issue 17)
test('a response that carries a secret an earlier request sent fails its request', async () => {
  const app = Fastify()
  let stored: unknown
  app.put('/config', async (request) => {
    stored = request.body
    return { ok: true }
  })
  app.get('/config', async () => stored)
  app.get('/masked', async () => ({ auth: { type: 'header', header: { name: 'X-Api-Key' } } }))
  await instrumentTestApp(app)
  try {
    const body = {
      auth: { type: 'header', header: { name: 'X-Api-Key', value: 'hv-echo-0a1b2c3d' } },
      basic: { password: 'pw-echo-9z8y7x' },
    }
    assert.equal((await app.inject({ method: 'PUT', url: '/config', payload: body })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/masked' })).statusCode, 200, 'a masked answer passes')
    await assert.rejects(app.inject({ method: 'GET', url: '/config' }), /contains 2 secret\(s\)/)
  } finally {
    forgetSecrets()
    await app.close()
  }
})

test('what counts as a secret: password, secret and private fields, an auth header value; short values and other fields do not', () => {
  rememberSecrets({
    password: 'long-password-1',
    short: { password: 'abc' },
    name: 'not-a-secret-but-long',
    headers: { value: 'plain-header-value' },
    signing: { secret: 'whsec-123456789' },
  })
  rememberSecrets(JSON.stringify({ private_key: 'pk-0123456789' }))
  const text = 'long-password-1 abc not-a-secret-but-long plain-header-value whsec-123456789 pk-0123456789'
  assert.deepEqual(echoedSecrets({ headers: {}, body: text }).sort(), [
    'long-password-1',
    'pk-0123456789',
    'whsec-123456789',
  ])
  forgetSecrets()
})

import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { buildApp } from '../../app.js'
import { appModules } from '../../modules/index.js'
import { createWebhookDeliverer, type DeliverWebhookPayload } from '../../modules/automations/index.js'
import { currentSigningKey, signingKeySecrets } from '../keys/signing-keys.js'
import { rotateSecrets } from './rotate-secrets.js'
import { SecretBox, writeKeyFile } from './secret-box.js'
import { call, testConfig, TEST_SECRETS_KEY } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
const app = buildApp({ config, db })
const deliverer = createWebhookDeliverer(
  { db, config, log: pino({ level: 'silent' }) },
  { retryDelaysMs: [10], timeoutMs: 2_000 },
)

/** Every response body the app sends in this file: none may carry a secret it was given. */
const responses: string[] = []
void app.then((a) =>
  a.addHook('onSend', async (_request, reply, payload) => {
    responses.push(
      `${JSON.stringify(reply.getHeaders())}\n${typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : ''}`,
    )
    return payload
  }),
)

const SECRETS = {
  password: 'pw-PLAINTEXT-7f3a91',
  headerValue: 'hv-PLAINTEXT-2c88e0',
  signing: 'sig-PLAINTEXT-d41d8c',
}

after(async () => {
  await deliverer.close()
  await (await app).close()
})

async function receiver() {
  const received: http.IncomingHttpHeaders[] = []
  const server = http.createServer((req, res) => {
    received.push(req.headers)
    req.resume().on('end', () => res.writeHead(204).end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise((r) => server.close(r)),
  }
}

const actions = (url: string) => [
  {
    type: 'webhook',
    config: {
      url,
      method: 'POST',
      headers: {},
      auth: { type: 'basic', basic: { username: 'u', password: SECRETS.password } },
    },
  },
  {
    type: 'webhook',
    config: {
      url,
      method: 'POST',
      headers: {},
      auth: { type: 'header', header: { name: 'X-Api-Key', value: SECRETS.headerValue } },
    },
  },
  {
    type: 'webhook',
    config: { url, method: 'POST', headers: {}, auth: { type: 'secret', secret: { secret: SECRETS.signing } } },
  },
]

async function rawAutomation(id: number): Promise<string> {
  const { rows } = await sql<{ raw: string }>`select actions::text as raw from automations where id = ${id}`.execute(db)
  return rows[0]!.raw
}

async function deliverAll(tenant: GivenTenant, automationId: number) {
  const res = await call(await app, tenant.adminToken, {
    method: 'POST',
    url: `/api/administration/automations/${automationId}/test`,
  })
  assert.equal(res.statusCode, 202, res.body)
  const ids: number[] = res.json().delivery_ids
  const { rows } = await sql<{ payload: DeliverWebhookPayload }>`
    delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
    where t.id = j.task_id and t.identifier = 'automations:deliver_webhook' and (j.payload->>'deliveryId')::bigint = any(${ids})
    returning j.payload`.execute(db)
  for (const row of rows) assert.equal(await deliverer.deliver(row.payload), 'succeeded')
}

test('webhook credentials are stored encrypted, never shown, and still sent', async () => {
  const tenant = await given.tenant(db)
  const peer = await receiver()
  try {
    const created = await call(await app, tenant.adminToken, {
      method: 'POST',
      url: '/api/administration/automations',
      payload: { name: 'hook', event: '*', actions: actions(peer.url) },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().id as number

    const raw = await rawAutomation(id)
    for (const secret of Object.values(SECRETS))
      assert.ok(!raw.includes(secret), `raw row holds ${secret} in plain text`)
    assert.equal(raw.match(/enc:v1\./g)?.length, 3, 'the three credentials are sealed')

    // an update that leaves the secrets out keeps them (carried over, re-sealed)
    const kept = actions(peer.url).map((a, i) =>
      i === 0 ? { ...a, config: { ...a.config, auth: { type: 'basic', basic: { username: 'u2' } } } } : a,
    )
    const updated = await call(await app, tenant.adminToken, {
      method: 'PUT',
      url: `/api/administration/automations/${id}`,
      payload: { actions: kept },
    })
    assert.equal(updated.statusCode, 200, updated.body)
    for (const url of [
      `/api/administration/automations/${id}`,
      '/api/administration/automations',
      '/api/administration/audit-log',
    ]) {
      assert.equal((await call(await app, tenant.adminToken, { method: 'GET', url })).statusCode, 200)
    }
    // the audit records of the create and the update describe the actions with the secrets masked
    const csv = await call(await app, tenant.adminToken, {
      method: 'GET',
      url: '/api/administration/audit-log?filter[target_type]=automation',
      headers: { accept: 'text/csv' },
    })
    assert.equal(csv.statusCode, 200)
    assert.match(csv.body, /automation\.update/)
    const { rows: audit } = await sql<{
      raw: string
    }>`select changes::text as raw from audit_log where tenant_id = ${tenant.id}`.execute(db)
    for (const secret of Object.values(SECRETS))
      assert.ok(!audit.some((r) => r.raw.includes(secret)), `an audit record holds ${secret}`)
    // validation errors echo nothing secret
    await call(await app, tenant.adminToken, {
      method: 'POST',
      url: '/api/administration/automations/validate-action',
      payload: {
        type: 'webhook',
        config: {
          url: 'nope',
          headers: {},
          auth: { type: 'basic', basic: { username: 'a:b', password: SECRETS.password } },
        },
      },
    })

    await deliverAll(tenant, id)
    const authorizations = peer.received.map((h) => h.authorization ?? h['x-api-key'] ?? h['webhook-signature'])
    assert.ok(
      authorizations.includes(`Basic ${Buffer.from(`u2:${SECRETS.password}`).toString('base64')}`),
      'basic password decrypted for the delivery',
    )
    assert.ok(authorizations.includes(SECRETS.headerValue), 'header value decrypted for the delivery')
    assert.ok(!(await rawAutomation(id)).includes(SECRETS.password))
  } finally {
    await peer.close()
  }
})

test('private signing keys are stored encrypted', async () => {
  const { kid } = await currentSigningKey(db, new SecretBox(config.secrets))
  const { rows } = await sql<{
    raw: string
  }>`select private_jwk::text as raw from signing_keys where kid = ${kid}`.execute(db)
  assert.match(rows[0]!.raw, /^\{"sealed": "enc:v1\./)
  assert.ok(!rows[0]!.raw.includes('"d"'), 'no private member in plain text')
})

test('signing keys written before encryption are sealed by a re-seal pass', async () => {
  const box = new SecretBox(config.secrets)
  const kid = `legacy-${Date.now()}`
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      alg: 'ES256',
      public_jwk: JSON.stringify({ kty: 'EC' }),
      private_jwk: JSON.stringify({ kty: 'EC', d: 'PRIVATE-d-member' }),
      retired_at: new Date() as never,
    })
    .execute()
  assert.ok((await signingKeySecrets.reseal(db, box)) >= 1)
  const row = await db.selectFrom('signing_keys').select('private_jwk').where('kid', '=', kid).executeTakeFirstOrThrow()
  assert.ok(!JSON.stringify(row.private_jwk).includes('PRIVATE-d-member'))
  assert.equal(JSON.parse(box.open(row.private_jwk.sealed as string)).d, 'PRIVATE-d-member')
  await db.deleteFrom('signing_keys').where('kid', '=', kid).execute()
})

test('rotation re-encrypts plain and old-key values under a new key file key, readable by a running process', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-'))
  const fileConfig = testConfig({ DATA_DIR: dataDir, SECRETS_KEY: '' }).secrets
  const fresh = new SecretBox(testConfig({ DATA_DIR: path.join(dataDir, 'fresh'), SECRETS_KEY: '' }).secrets)
  assert.equal(
    fs.statSync(path.join(dataDir, 'fresh', 'secrets.key')).mode & 0o777,
    0o600,
    'a generated key file is private',
  )
  assert.equal(fresh.open(fresh.seal('x')), 'x')
  // the embedded default of this database: its key file holds the key the other rows are sealed with
  writeKeyFile(fileConfig.keyFile, [Buffer.from(TEST_SECRETS_KEY, 'base64')])
  const running = new SecretBox(fileConfig) // the API process
  const tenant = await given.tenant(db)
  const sealedOld = running.seal(SECRETS.signing)
  const stored = [
    {
      type: 'webhook',
      config: {
        url: 'http://127.0.0.1/x',
        method: null,
        headers: {},
        auth: { type: 'basic', basic: { username: 'u', password: SECRETS.password } },
      },
    }, // written before encryption
    {
      type: 'webhook',
      config: {
        url: 'http://127.0.0.1/x',
        method: null,
        headers: {},
        auth: { type: 'secret', secret: { secret: sealedOld } },
      },
    },
  ]
  const { id } = await db
    .insertInto('automations')
    .values({ tenant_id: tenant.id, name: 'legacy', event: '*', actions: JSON.stringify(stored) })
    .returning('id')
    .executeTakeFirstOrThrow()
  // the sign-in secrets: an OpenID client secret stored before encryption, a TOTP secret under the old key
  await sql`insert into oidc_providers (tenant_id, issuer, client_id, client_secret, scopes, username_claim, provisioning)
    values (${tenant.id}, 'https://idp.example', 'client', ${SECRETS.password}, 'openid', 'sub', 'off')`.execute(db)
  await sql`insert into user_totp (tenant_id, user_id, secret, created_at)
    values (${tenant.id}, ${tenant.adminId}, ${sealedOld}, now())`.execute(db)
  const oldKeyId = running.currentKeyId()

  const cli = new SecretBox(fileConfig)
  const result = await rotateSecrets(
    db,
    cli,
    appModules.flatMap((m) => m.secretHolders ?? []),
    { settleMs: 10, tenantId: tenant.id },
  )
  assert.equal(result.generated, true)
  assert.notEqual(result.keyId, oldKeyId)
  assert.ok(result.resealed.automations! >= 1)
  assert.equal(result.resealed.oidc_providers, 1)
  assert.equal(result.resealed.user_totp, 1)
  const { rows: signIn } = await sql<{ client_secret: string; secret: string }>`
    select p.client_secret, t.secret from oidc_providers p join user_totp t on t.tenant_id = p.tenant_id
    where p.tenant_id = ${tenant.id}`.execute(db)
  for (const value of [signIn[0].client_secret, signIn[0].secret])
    assert.ok(value.startsWith(`enc:v1.${result.keyId}.`), 'the sign-in secrets are under the new key')
  assert.equal(running.open(signIn[0].client_secret), SECRETS.password)
  assert.equal(running.open(signIn[0].secret), SECRETS.signing)
  assert.equal(fs.statSync(fileConfig.keyFile).mode & 0o777, 0o600)
  assert.equal(
    fs.readFileSync(fileConfig.keyFile, 'utf8').trim().split('\n').length,
    2,
    'the old key stays for reading',
  )

  const raw = await rawAutomation(id)
  assert.ok(!raw.includes(SECRETS.password) && !raw.includes(sealedOld), raw)
  assert.equal(raw.match(new RegExp(`enc:v1\\.${result.keyId}\\.`, 'g'))?.length, 2, 'both values under the new key')
  const row = await db.selectFrom('automations').select('actions').where('id', '=', id).executeTakeFirstOrThrow()
  const cfg = (i: number) => row.actions[i]!.config.auth as Record<string, Record<string, string>>
  // the running process has not re-read the key file yet: it learns the new key on first sight
  assert.equal(running.open(cfg(0).basic!.password!), SECRETS.password)
  assert.equal(running.open(cfg(1).secret!.secret!), SECRETS.signing)
  assert.equal(running.open(sealedOld), SECRETS.signing, 'values sealed under the old key still open')
  fs.rmSync(dataDir, { recursive: true, force: true })
})

// last in this file: it sees every response the tests above produced
test('no API response of this file contains a secret it set', () => {
  const leaking = responses.filter((body) => Object.values(SECRETS).some((secret) => body.includes(secret)))
  assert.ok(responses.length >= 6, `responses were captured (${responses.length})`)
  assert.deepEqual(leaking, [], 'no API response contains a secret it was given')
})

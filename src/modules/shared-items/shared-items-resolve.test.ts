import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose'
import { buildTestApp, call, testSecrets } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { givenTarget, useTestShareTargets } from '../../../test/helpers/shared-items-support.js'
import { actorFromGrantToken, GRANT_TOKEN_TTL_SECONDS, issueGrantToken, verifyGrantToken } from './index.js'
import { AppError } from '../../platform/http/errors.js'

const db = testDb()
const app = await buildTestApp()
await useTestShareTargets(db)

const BASE = 'http://api.test'
const APP = 'http://app.test'
const get = (token: string, url: string) => call(app, token, { method: 'GET', url })

/**
 * A tenant with a file (with poster), a file without poster and a calendar event; `viewer` holds
 * filemanager.view and calendar.view; `outsider` holds neither module permission.
 */
async function setup() {
  const tenant = await given.tenant(db)
  const viewerRole = await given.role(db, tenant, ['filemanager.view', 'calendar.view'])
  const outsiderRole = await given.role(db, tenant, [])
  const viewer = await given.user(db, tenant, { roleId: viewerRole })
  const outsider = await given.user(db, tenant, { roleId: outsiderRole })
  const file = await givenTarget(db, tenant, 'filemanagerFile', { title: 'report.pdf', hasPoster: true })
  const plainFile = await givenTarget(db, tenant, 'filemanagerFile', { title: 'notes.txt' })
  const event = await givenTarget(db, tenant, 'calendarEvent', { title: 'Kick-off' })
  return { tenant, viewer, outsider, file, plainFile, event }
}

const FLAG_VARIANTS = {
  none: (id: number) => `${APP}/test/filemanagerFile/${id}`,
  showFileContent: (id: number) => `${BASE}/api/filemanager/files/${id}/content`,
  downloadFileContent: (id: number) => `${BASE}/api/filemanager/files/${id}/download`,
  filePoster: (id: number) => `${BASE}/api/filemanager/files/${id}/poster`,
} as const
type Flag = keyof typeof FLAG_VARIANTS
const query = (flag: Flag) => (flag === 'none' ? '' : `?${flag}=true`)

/** Strips the grant token so URLs can be compared; returns it separately. */
function splitToken(url: string): { url: string; token: string | null } {
  const parsed = new URL(url)
  const token = parsed.searchParams.get('grant_token')
  parsed.searchParams.delete('grant_token')
  return { url: parsed.toString(), token }
}

// Redirect type × (user can / cannot view the target) × URL type flag, through both /resolve and /shared.
for (const redirectType of ['none', 'redirect', 'redirectWithGrantToken'] as const) {
  for (const canView of [true, false]) {
    for (const flag of Object.keys(FLAG_VARIANTS) as Flag[]) {
      test(`${redirectType}, user ${canView ? 'can' : 'cannot'} view the target, ${flag}`, async () => {
        const s = await setup()
        const item = await given.sharedItem(db, s.tenant, {
          type: 'filemanagerFile',
          targetable_id: s.file,
          redirect_type: redirectType,
        })
        const user = canView ? s.viewer : s.outsider

        const resolved = await get(user.token, `/api/shared-items/${item}/resolve${query(flag)}`)
        const stable = await get(user.token, `/shared/${item}${query(flag)}`)

        if (redirectType === 'none') {
          assert.equal(resolved.statusCode, 200, resolved.body)
          assert.deepEqual(resolved.json(), { redirect: false, url: null, url_context: null })
          assert.equal(stable.statusCode, 200)
          assert.deepEqual(stable.json(), { redirect: false, url: null, url_context: null })
          return
        }
        if (redirectType === 'redirect' && !canView) {
          for (const res of [resolved, stable]) {
            assert.equal(res.statusCode, 403, res.body)
            assert.equal(res.json().code, 'target_not_accessible')
          }
          return
        }
        assert.equal(resolved.statusCode, 200, resolved.body)
        const body = resolved.json()
        assert.equal(body.redirect, true)
        const { url, token } = splitToken(body.url)
        assert.equal(url, FLAG_VARIANTS[flag](s.file))
        assert.deepEqual(body.url_context, { type: 'filemanagerFile', id: s.file, title: 'report.pdf', url: body.url })
        assert.equal(token !== null, redirectType === 'redirectWithGrantToken')
        if (token) assert.ok(await verifyGrantToken(db, token, { alias: 'filemanagerFile', id: s.file, issuer: BASE }))

        assert.equal(stable.statusCode, 302, stable.body)
        assert.equal(splitToken(stable.headers.location as string).url, FLAG_VARIANTS[flag](s.file))
      })
    }
  }
}

test('an unavailable URL variant falls back to the target URL', async () => {
  const s = await setup()
  const withoutPoster = await given.sharedItem(db, s.tenant, {
    type: 'filemanagerFile',
    targetable_id: s.plainFile,
    redirect_type: 'redirect',
  })
  const event = await given.sharedItem(db, s.tenant, {
    type: 'calendarEvent',
    targetable_id: s.event,
    redirect_type: 'redirect',
  })

  const poster = await get(s.viewer.token, `/api/shared-items/${withoutPoster}/resolve?filePoster=true`)
  const content = await get(s.viewer.token, `/api/shared-items/${withoutPoster}/resolve?showFileContent=1`)
  const eventDownload = await get(s.viewer.token, `/shared/${event}?downloadFileContent=true`)

  assert.equal(poster.json().url, `${APP}/test/filemanagerFile/${s.plainFile}`)
  assert.equal(content.json().url, `${BASE}/api/filemanager/files/${s.plainFile}/content`)
  assert.equal(eventDownload.statusCode, 302)
  assert.equal(eventDownload.headers.location, `${APP}/test/calendarEvent/${s.event}`)
})

test('two or more URL type flags answer 422 naming each; false flags do not count', async () => {
  const s = await setup()
  const item = await given.sharedItem(db, s.tenant, {
    type: 'filemanagerFile',
    targetable_id: s.file,
    redirect_type: 'redirect',
  })

  const two = await get(s.viewer.token, `/api/shared-items/${item}/resolve?showFileContent=true&filePoster=true`)
  const three = await get(s.viewer.token, `/shared/${item}?showFileContent=1&downloadFileContent=1&filePoster=1`)
  const bad = await get(s.viewer.token, `/shared/${item}?filePoster=maybe`)
  const oneFalse = await get(s.viewer.token, `/api/shared-items/${item}/resolve?showFileContent=false&filePoster=true`)

  assert.equal(two.statusCode, 422, two.body)
  assert.deepEqual(Object.keys(two.json().errors).sort(), ['filePoster', 'showFileContent'])
  assert.equal(three.statusCode, 422)
  assert.deepEqual(Object.keys(three.json().errors).sort(), ['downloadFileContent', 'filePoster', 'showFileContent'])
  assert.equal(bad.statusCode, 422)
  assert.ok(bad.json().errors.filePoster)
  assert.equal(oneFalse.statusCode, 200, oneFalse.body)
  assert.equal(oneFalse.json().url, `${BASE}/api/filemanager/files/${s.file}/poster`)
})

test("a user the item's view grants exclude gets 404 from resolve and the stable URL", async () => {
  const s = await setup()
  const item = await given.sharedItem(db, s.tenant, {
    type: 'calendarEvent',
    targetable_id: s.event,
    redirect_type: 'redirect',
  })
  await given.grant(db, s.tenant, { key: 'view', to: ['user', s.outsider.id], on: ['sharedItem', item] })

  assert.equal((await get(s.viewer.token, `/api/shared-items/${item}/resolve`)).statusCode, 404)
  assert.equal((await get(s.viewer.token, `/shared/${item}`)).statusCode, 404)
  assert.equal((await get(s.outsider.token, `/shared/${item}`)).statusCode, 403)
})

test("redirect honours the target's own view grants, not only the module permission", async () => {
  const s = await setup()
  await given.grant(db, s.tenant, { key: 'view', to: ['user', s.outsider.id], on: ['calendarEvent', s.event] })
  const item = await given.sharedItem(db, s.tenant, {
    type: 'calendarEvent',
    targetable_id: s.event,
    redirect_type: 'redirect',
  })

  const res = await get(s.viewer.token, `/api/shared-items/${item}/resolve`)

  assert.equal(res.statusCode, 403)
  assert.equal(res.json().code, 'target_not_accessible')
})

test('a target that no longer exists answers 404 target_not_found', async () => {
  const s = await setup()
  const item = await given.sharedItem(db, s.tenant, {
    type: 'calendarEvent',
    targetable_id: 999999999,
    redirect_type: 'redirectWithGrantToken',
  })

  const res = await get(s.viewer.token, `/api/shared-items/${item}/resolve`)

  assert.equal(res.statusCode, 404)
  assert.equal(res.json().code, 'target_not_found')
})

// ---- grant tokens ------------------------------------------------------------------------------

/** A redirectWithGrantToken item on `s.file` restricted (view) to the outsider, and its token for the outsider. */
async function tokenSetup() {
  const s = await setup()
  const item = await given.sharedItem(db, s.tenant, {
    type: 'filemanagerFile',
    targetable_id: s.file,
    redirect_type: 'redirectWithGrantToken',
  })
  await given.grant(db, s.tenant, { key: 'view', to: ['user', s.outsider.id], on: ['sharedItem', item] })
  const resolved = await get(s.outsider.token, `/api/shared-items/${item}/resolve?downloadFileContent=true`)
  assert.equal(resolved.statusCode, 200, resolved.body)
  const token = splitToken(resolved.json().url).token!
  return { ...s, item, token }
}

test('a grant token carries the contract claims and is ES256 with a kid from the JWKS', async () => {
  const s = await tokenSetup()

  const header = decodeProtectedHeader(s.token)
  const claims = decodeJwt(s.token)
  const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()

  assert.equal(header.alg, 'ES256')
  assert.ok(jwks.keys.some((k: { kid: string }) => k.kid === header.kid))
  assert.equal(claims.iss, BASE)
  assert.equal(claims.sub, String(s.outsider.id))
  assert.equal(claims.tid, s.tenant.slug)
  assert.equal(claims.sid, s.item)
  assert.equal(claims.tgt, `filemanagerFile:${s.file}`)
  assert.deepEqual(claims.scope, ['view'])
  assert.equal(claims.exp! - claims.iat!, GRANT_TOKEN_TTL_SECONDS)
})

test('a valid grant token admits its holder to exactly that target', async () => {
  const s = await tokenSetup()

  const grant = await verifyGrantToken(db, s.token, { alias: 'filemanagerFile', id: s.file, issuer: BASE })
  const actor = await actorFromGrantToken(db, s.token, 'filemanagerFile', s.file, { issuer: BASE })

  assert.ok(grant)
  assert.equal(grant.userId, s.outsider.id)
  assert.equal(grant.tenantId, s.tenant.id)
  assert.equal(grant.sharedItemId, s.item)
  assert.equal(actor.userId, s.outsider.id)
  assert.equal(actor.isAdmin, false)
  assert.equal(actor.permissions.size, 0)
  assert.deepEqual(actor.grant, { sharedItemId: s.item, alias: 'filemanagerFile', id: s.file })
})

async function assertRefused(token: string, alias: string, id: number | string, issuer = BASE) {
  assert.equal(await verifyGrantToken(db, token, { alias, id, issuer }), undefined)
  await assert.rejects(
    actorFromGrantToken(db, token, alias, id, { issuer }),
    (error: unknown) => error instanceof AppError && error.status === 401,
  )
}

test('grant token refused: another target (other file, other alias)', async () => {
  const s = await tokenSetup()
  await assertRefused(s.token, 'filemanagerFile', s.plainFile)
  await assertRefused(s.token, 'calendarEvent', s.file)
})

test('grant token refused: expired', async () => {
  const s = await tokenSetup()
  const old = await issueGrantToken(db, {
    secrets: testSecrets(),
    issuer: BASE,
    tenantSlug: s.tenant.slug,
    userId: s.outsider.id,
    sharedItemId: s.item,
    alias: 'filemanagerFile',
    id: s.file,
    now: Math.floor(Date.now() / 1000) - GRANT_TOKEN_TTL_SECONDS - 1,
  })
  await assertRefused(old, 'filemanagerFile', s.file)
})

test('grant token refused: tampered payload, signature or algorithm', async () => {
  const s = await tokenSetup()
  const [header, payload, signature] = s.token.split('.')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  const forged = Buffer.from(JSON.stringify({ ...claims, tgt: `filemanagerFile:${s.plainFile}` })).toString('base64url')
  const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1)
  const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`

  await assertRefused(`${header}.${forged}.${signature}`, 'filemanagerFile', s.plainFile)
  await assertRefused(`${header}.${payload}.${flipped}`, 'filemanagerFile', s.file)
  await assertRefused(none, 'filemanagerFile', s.file)
  await assertRefused('garbage', 'filemanagerFile', s.file)
})

test('grant token refused: wrong issuer', async () => {
  const s = await tokenSetup()
  await assertRefused(s.token, 'filemanagerFile', s.file, 'http://elsewhere.test')
})

test('grant token refused: shared item deleted', async () => {
  const s = await tokenSetup()
  await db.updateTable('shared_items').set({ deleted_at: new Date() }).where('id', '=', s.item).execute()
  await assertRefused(s.token, 'filemanagerFile', s.file)
})

test('grant token refused: access revoked (holder no longer a view grantee of the item)', async () => {
  const s = await tokenSetup()
  await db
    .updateTable('entity_permissions')
    .set({ permission_entity_id: s.viewer.id })
    .where('tenant_id', '=', s.tenant.id)
    .where('target_entity', '=', 'sharedItem')
    .where('target_entity_id', '=', s.item)
    .execute()
  await assertRefused(s.token, 'filemanagerFile', s.file)
})

test('grant token refused: item retargeted or no longer redirectWithGrantToken', async () => {
  const s = await tokenSetup()
  await db.updateTable('shared_items').set({ redirect_type: 'redirect' }).where('id', '=', s.item).execute()
  await assertRefused(s.token, 'filemanagerFile', s.file)
  await db
    .updateTable('shared_items')
    .set({ redirect_type: 'redirectWithGrantToken', targetable_id: String(s.plainFile) })
    .where('id', '=', s.item)
    .execute()
  await assertRefused(s.token, 'filemanagerFile', s.file)
})

test('grant token refused: holder deactivated', async () => {
  const s = await tokenSetup()
  await db.updateTable('users').set({ active: false }).where('id', '=', s.outsider.id).execute()
  await assertRefused(s.token, 'filemanagerFile', s.file)
})

test('grant token refused: signed by a key the JWKS does not publish', async () => {
  const s = await tokenSetup()
  const { privateKey } = await generateKeyPair('ES256')
  const claims = decodeJwt(s.token)
  const sign = (kid: string) => new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', kid }).sign(privateKey)

  await assertRefused(await sign('unknown-kid'), 'filemanagerFile', s.file)
  await assertRefused(await sign(decodeProtectedHeader(s.token).kid!), 'filemanagerFile', s.file)
})

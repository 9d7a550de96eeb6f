/**
 * Issue 14: Web Push at scale. A department of up to 5,000 users (the quick seed has 1,000), each with one
 * subscription whose endpoint is a local push service (plain node:http, 201 for every message; the
 * encryption and VAPID signature are verified in src/modules/notifications/push.test.ts). One `POST /api/notifications` to the
 * department: the time from the 202 until the push service has received a message for every recipient
 * (target: all within 5 s), and the deliveries per second that makes (target ≥ 500/s, like webhooks).
 */
import { createECDH, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import { createDepartment } from './fan-out.js'
import type { SeededTenant } from './seed.js'
import { errorMessage, pollUntil } from './wait.js'

type Row = Record<string, unknown>

export interface PushContext {
  db: Db
  apiUrl: string
  tenant: SeededTenant
}

const RECIPIENTS = 5_000
const TARGET_MS = 5_000
const TARGET_RATE = 500

export async function measurePush(ctx: PushContext): Promise<Row[]> {
  const base = {
    id: 'push',
    request: `POST /api/notifications to a department, every recipient with one Web Push subscription`,
    target: `all within ${TARGET_MS} ms, ≥ ${TARGET_RATE}/s`,
  }
  const received = new Set<string>()
  const server = http.createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      received.add(request.url ?? '')
      response.writeHead(201).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const {
      rows: [{ n: users }],
    } = await sql<{
      n: number
    }>`select count(*)::int as n from users where tenant_id = ${ctx.tenant.tenantId} and username like 'user%'`.execute(
      ctx.db,
    )
    const size = Math.min(RECIPIENTS, users)
    const departmentId = await createDepartment(
      ctx.db,
      ctx.tenant.tenantId,
      `push-bench-${randomBytes(3).toString('hex')}`,
      size,
    )
    const ecdh = createECDH('prime256v1')
    ecdh.generateKeys()
    await sql`insert into push_subscriptions (tenant_id, user_id, endpoint, p256dh, auth)
      select ${ctx.tenant.tenantId}, du.user_id, ${`${origin}/push/`} || du.user_id, ${ecdh.getPublicKey().toString('base64url')}, ${randomBytes(16).toString('base64url')}
      from department_users du join users u on u.tenant_id = du.tenant_id and u.id = du.user_id
      where du.tenant_id = ${ctx.tenant.tenantId} and du.department_id = ${departmentId} and u.active and u.deleted_at is null and not u.group_account`.execute(
      ctx.db,
    )
    const {
      rows: [{ n: expected }],
    } = await sql<{
      n: number
    }>`select count(*)::int as n from push_subscriptions where tenant_id = ${ctx.tenant.tenantId} and endpoint like ${`${origin}/push/%`}`.execute(
      ctx.db,
    )
    const t0 = performance.now()
    const res = await fetch(`${ctx.apiUrl}/api/notifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.tenant.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        title: 'Push bench',
        body: '<p>Shift plan is out</p>',
        url: '/shifts',
        department_ids: [departmentId],
      }),
    })
    if (res.status !== 202) throw new Error(`the send answered ${res.status}: ${(await res.text()).slice(0, 300)}`)
    const outcome = await pollUntil(
      async () => received.size,
      (n) => n >= expected,
      { intervalMs: 10, timeoutMs: 60_000 },
    )
    const ms = Math.round(performance.now() - t0)
    const rate = Math.round(received.size / (ms / 1000))
    const row = {
      ...base,
      recipients: expected,
      delivered: received.size,
      ms,
      rate,
      pass: outcome.done && ms <= TARGET_MS && rate >= TARGET_RATE,
    }
    console.log(
      `${'push'.padEnd(14)} ${received.size} of ${expected} pushes in ${ms} ms: ${rate}/s (target ${base.target})`,
    )
    return [row]
  } catch (error) {
    console.log(`${'push'.padEnd(14)} FAILED: ${errorMessage(error)}`)
    return [{ ...base, pass: false, error: errorMessage(error) }]
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    // the push service is gone: its 5,000 subscriptions would make every later send to these users (the
    // publish part's, to the whole tenant) retry pushes against a closed port (41 s instead of 17 s)
    await sql`delete from push_subscriptions where tenant_id = ${ctx.tenant.tenantId} and endpoint like ${`${origin}/push/%`}`.execute(
      ctx.db,
    )
  }
}

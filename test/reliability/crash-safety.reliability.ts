/**
 * Crash safety (contract 90): a real worker process is SIGKILLed during a 10,000-recipient fan-out and
 * during a burst of 1,000 webhook deliveries; after a restart every notification exists exactly once
 * and every webhook event reached the receiver at least once.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { sql } from 'kysely'
import type { FastifyInstance } from 'fastify'
import { recordDomainEvent } from '../../src/platform/events/domain-events.js'
import { call } from '../helpers/build-test-app.js'
import { given } from '../helpers/given.js'
import { testDatabaseUrl, testDb } from '../helpers/test-database.js'
import { appWithRouteTable } from './support/routes.js'
import { seedDepartment, waitFor, workplace, type Proc } from './support/processes.js'

const db = testDb()
let app: FastifyInstance
const workers: Proc[] = []
const workerEnv = { DATABASE_URL: testDatabaseUrl(), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WORKER_CONCURRENCY: '8' }

before(async () => {
  ;({ app } = await appWithRouteTable())
})
after(async () => {
  for (const w of workers) w.child.kill('SIGKILL')
  await app.close()
})

function startWorker(): Proc {
  const w = workplace('worker', workerEnv)
  workers.push(w)
  return w
}

async function killNine(w: Proc): Promise<void> {
  w.child.kill('SIGKILL')
  await w.exited
}

test(
  'SIGKILL of the worker during a 10,000-recipient fan-out: after restart every notification exists exactly once',
  { timeout: 240_000 },
  async () => {
    const tenant = await given.tenant(db)
    const departmentId = await seedDepartment(db, tenant, 10_000)
    const res = await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/notifications',
      payload: { title: 'All hands', body: '<p>Hi</p>', url: '/home', department_ids: [departmentId] },
    })
    assert.equal(res.statusCode, 202, res.body)
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('notifications')
            .select(db.fn.countAll().as('n'))
            .where('tenant_id', '=', tenant.id)
            .executeTakeFirstOrThrow()
        ).n,
      )

    const first = startWorker()
    const atKill = await waitFor(
      'the fan-out to start',
      async () => {
        const n = await count()
        return n > 0 ? n : undefined
      },
      60_000,
      5,
    )
    await killNine(first)
    const afterKill = await count()
    console.log(`# fan-out: worker killed with ${atKill} of 10000 notifications written (${afterKill} committed)`)

    const second = startWorker()
    await waitFor('all 10,000 notifications', async () => (await count()) === 10_000, 90_000, 200)
    await new Promise((r) => setTimeout(r, 1500)) // a duplicate would appear now if the job ran twice without idempotency
    const { rows } = await sql<{ total: number; distinct_users: number }>`
    select count(*)::int as total, count(distinct notifiable_id)::int as distinct_users from notifications where tenant_id = ${tenant.id}`.execute(
      db,
    )
    assert.deepEqual(rows[0], { total: 10_000, distinct_users: 10_000 })
    await killNine(second)
  },
)

test(
  'SIGKILL of the worker during 1,000 webhook deliveries: after restart every event reached the receiver',
  { timeout: 240_000 },
  async () => {
    const received = new Map<string, number>()
    const receiver = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const id = String(req.headers['webhook-id'])
        received.set(id, (received.get(id) ?? 0) + 1)
        res.writeHead(200).end('ok')
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
      const tenant = await given.tenant(db)
      await db
        .insertInto('automations' as never)
        .values({
          tenant_id: tenant.id,
          name: 'burst',
          event: 'user.updated',
          active: true,
          user_id: tenant.adminId,
          actions: JSON.stringify([{ type: 'webhook', config: { url, method: 'POST', headers: {}, auth: null } }]),
        } as never)
        .execute()
      const eventIds = await db.transaction().execute(async (trx) => {
        const ids: string[] = []
        for (let i = 0; i < 1000; i++) {
          ids.push(
            await recordDomainEvent(trx, {
              type: 'user.updated',
              tenantId: tenant.id,
              actorId: tenant.adminId,
              subjectType: 'user',
              subjectId: tenant.adminId,
              data: { i },
            }),
          )
        }
        return ids
      })
      const deliveries = (await db
        .selectFrom('webhook_deliveries' as never)
        .select(sql<number>`count(*)::int`.as('n'))
        .where('tenant_id' as never, '=', tenant.id as never)
        .executeTakeFirstOrThrow()) as { n: number }
      assert.equal(deliveries.n, 1000, 'one delivery per event')

      const first = startWorker()
      await waitFor('the burst to start', async () => received.size >= 50, 60_000, 5).catch(async (error) => {
        const sample = await db
          .selectFrom('webhook_deliveries' as never)
          .selectAll()
          .where('tenant_id' as never, '=', tenant.id as never)
          .limit(2)
          .execute()
        throw new Error(`${error.message}\nworker output: ${first.output()}\ndeliveries: ${JSON.stringify(sample)}`)
      })
      await killNine(first)
      const atKill = received.size
      console.log(`# webhooks: worker killed after ${atKill} of 1000 events reached the receiver`)

      const second = startWorker()
      await waitFor(
        'every event at the receiver',
        async () => eventIds.every((id) => received.has(id)),
        120_000,
        200,
      ).catch(async (error) => {
        const jobs = await sql<{
          task_identifier: string
          n: number
          locked: number
        }>`select task_identifier, count(*)::int as n, count(locked_by)::int as locked from graphile_worker.jobs group by 1`.execute(
          db,
        )
        const states =
          await sql`select status, attempts, error, count(*)::int as n from webhook_deliveries where tenant_id = ${tenant.id} group by 1, 2, 3`.execute(
            db,
          )
        throw new Error(
          `${error.message}: ${received.size} received; jobs ${JSON.stringify(jobs.rows)}; deliveries ${JSON.stringify(states.rows)}\nsecond worker: ${second.output().slice(-3000)}`,
        )
      })
      const redelivered = [...received.values()].filter((n) => n > 1).length
      console.log(
        `# webhooks: after restart ${received.size} distinct webhook-ids = ${eventIds.length} events (${redelivered} delivered twice)`,
      )
      assert.equal(received.size, eventIds.length)
      await killNine(second)
    } finally {
      receiver.close()
    }
  },
)

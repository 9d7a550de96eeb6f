/**
 * Contract 90 "Fan-out": `POST /api/notifications` to a department of 5,000 users (all records
 * within 1 s) and to all 100,000 users of the tenant (within 10 s); `--quick` uses 1/100 of the sizes
 * with the same targets. The API answers 202 and a worker job inserts the records; completion is the
 * moment a poll (every 20 ms, by the send's `source_key`) counts every expected record.
 */
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import type { SeededTenant } from './seed.js'
import { errorMessage, pollUntil } from './wait.js'
import { waitForIdleQueue } from './worker.js'

type Row = Record<string, unknown>

export interface FanOutContext {
  db: Db
  apiUrl: string
  tenant: SeededTenant
  /** 1 (full) or 0.01 (`--quick`). */
  scale: number
}

const POLL_INTERVAL_MS = 20
const TIMEOUT_MS = 60_000

interface FanOutCase {
  id: string
  request: string
  targetMs: number
  /** Prepares the recipients (before the clock starts): the departments to send to. */
  departmentIds: () => Promise<number[]>
}

/** A department of the first `size` seeded users, created set-based. */
export async function createDepartment(db: Db, tenantId: number, name: string, size: number): Promise<number> {
  const { rows } = await sql<{
    id: string
  }>`insert into departments (tenant_id, name) values (${tenantId}, ${name}) returning id`.execute(db)
  const departmentId = Number(rows[0].id)
  await sql`insert into department_users (tenant_id, department_id, user_id)
    select ${tenantId}, ${departmentId}, id from users
    where tenant_id = ${tenantId} and username like 'user%' order by id limit ${size}`.execute(db)
  await sql`analyze department_users`.execute(db)
  return departmentId
}

async function departmentIdsOf(db: Db, tenantId: number): Promise<number[]> {
  const { rows } = await sql<{
    id: string
  }>`select id from departments where tenant_id = ${tenantId} order by id`.execute(db)
  return rows.map((r) => Number(r.id))
}

/** Recipients as the fan-out resolves them: de-duplicated members, active, non-deleted, personal accounts. */
async function expectedRecipients(db: Db, tenantId: number, departmentIds: number[]): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(distinct u.id)::int as n
    from department_users du join users u on u.tenant_id = du.tenant_id and u.id = du.user_id
    where du.tenant_id = ${tenantId} and du.department_id = any(${departmentIds}::bigint[])
      and u.active and u.deleted_at is null and u.blacked_out_at is null and not u.group_account`.execute(db)
  return rows[0].n
}

async function countRecords(db: Db, tenantId: number, sourceKey: string): Promise<number> {
  const { rows } = await sql<{
    n: number
  }>`select count(*)::int as n from notifications where tenant_id = ${tenantId} and source_key = ${sourceKey}`.execute(
    db,
  )
  return rows[0].n
}

/** The records of one generic send carry `source_key = genericNotification:<id>`; the send is found by its unique title. */
async function sourceKeyOf(db: Db, tenantId: number, title: string): Promise<string | undefined> {
  const { rows } = await sql<{
    id: string
  }>`select id from generic_notifications where tenant_id = ${tenantId} and title = ${title}`.execute(db)
  return rows[0] ? `genericNotification:${rows[0].id}` : undefined
}

/** The measurement proper: the row's figures, or `pass: false` with an `error`. */
async function measureCase(ctx: FanOutContext, c: FanOutCase): Promise<Row> {
  const { db, tenant } = ctx
  const departmentIds = await c.departmentIds()
  const expected = await expectedRecipients(db, tenant.tenantId, departmentIds)
  if (expected === 0) return { pass: false, error: 'the departments have no recipients' }
  const title = `Bench fan-out ${c.id} ${randomBytes(4).toString('hex')}`
  const body = JSON.stringify({
    title,
    body: '<p>Benchmark fan-out</p>',
    url: '/bench/fan-out',
    department_ids: departmentIds,
  })
  const t0 = performance.now()
  const response = await fetch(`${ctx.apiUrl}/api/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.adminToken}`, 'content-type': 'application/json' },
    body,
  })
  const acceptedMs = Math.round(performance.now() - t0)
  if (response.status !== 202) {
    return { pass: false, error: `POST answered ${response.status}: ${(await response.text()).slice(0, 200)}` }
  }
  const sourceKey = await sourceKeyOf(db, tenant.tenantId, title)
  if (!sourceKey) return { pass: false, error: 'the send was accepted but no generic_notifications row was found' }
  const outcome = await pollUntil(
    () => countRecords(db, tenant.tenantId, sourceKey),
    (n) => n >= expected,
    { intervalMs: POLL_INTERVAL_MS, timeoutMs: TIMEOUT_MS },
  )
  const ms = Math.round(outcome.at - t0)
  const result: Row = { recipients: expected, records: outcome.value, accepted_ms: acceptedMs }
  if (!outcome.done)
    return { ...result, pass: false, error: `${outcome.value} of ${expected} records after ${TIMEOUT_MS / 1000} s` }
  return { ...result, ms, records_per_s: Math.round(expected / (ms / 1000)), pass: ms < c.targetMs }
}

function printRow(row: Row): void {
  const figure =
    row.ms !== undefined
      ? `${row.ms} ms until ${row.records}/${row.recipients} records (202 after ${row.accepted_ms} ms, ${row.records_per_s} records/s)`
      : `FAILED: ${row.error}`
  console.log(`${String(row.id).padEnd(14)} ${figure} (target ${row.target})`)
}

/** Runs both fan-outs one after the other (each after the job queue is idle); failures become rows. */
export async function measureFanOut(ctx: FanOutContext): Promise<Row[]> {
  const { db, tenant } = ctx
  const departmentSize = Math.round(5_000 * ctx.scale)
  const cases: FanOutCase[] = [
    {
      id: 'fanout-5000',
      request: `POST /api/notifications to a department of ${departmentSize.toLocaleString('en-US')} users`,
      targetMs: 1_000,
      departmentIds: async () => [
        await createDepartment(db, tenant.tenantId, `Bench fan-out ${departmentSize}`, departmentSize),
      ],
    },
    {
      // every department of the tenant: together they hold every seeded user (the API has no "everyone" form)
      id: 'fanout-100000',
      request: `POST /api/notifications to all ${tenant.counts.users.toLocaleString('en-US')} users (every department)`,
      targetMs: 10_000,
      departmentIds: () => departmentIdsOf(db, tenant.tenantId),
    },
  ]
  const rows: Row[] = []
  for (const c of cases) {
    const base: Row = { id: c.id, request: c.request, target: `< ${c.targetMs} ms` }
    let row: Row
    try {
      await waitForIdleQueue(db)
      row = { ...base, ...(await measureCase(ctx, c)) }
    } catch (error) {
      row = { ...base, pass: false, error: errorMessage(error) }
    }
    rows.push(row)
    printRow(row)
  }
  return rows
}

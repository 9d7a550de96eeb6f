import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { buildApp } from '../app.js'
import { createLogger } from './logging.js'
import { pinoWorkerLogger } from './jobs/jobs.js'
import { testConfig } from '../../test/helpers/build-test-app.js'
import { given } from '../../test/helpers/given.js'
import { testDb } from '../../test/helpers/test-database.js'

const db = testDb()

function capture(isTTY = false) {
  const stream = new PassThrough() as PassThrough & { isTTY?: boolean }
  stream.isTTY = isTTY
  const lines: string[] = []
  let buffer = ''
  stream.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8')
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    lines.push(...parts)
  })
  return { stream, lines }
}

test('one JSON line per request: method, route pattern, status, duration, request id, tenant, user, problem code', async () => {
  const { stream, lines } = capture()
  const app = await buildApp({
    config: testConfig(),
    db,
    logger: createLogger({ level: 'info', format: 'json', destination: stream }),
  })
  const tenant = await given.tenant(db)
  const headers = { authorization: `Bearer ${tenant.adminToken}` }
  await app.inject({ method: 'GET', url: '/api/roles?selects=id', headers })
  await app.inject({ method: 'GET', url: '/api/users?username=anna', headers })
  await app.inject({ method: 'GET', url: '/health/live' })
  await app.inject({ method: 'GET', url: '/health/ready' })
  await new Promise((resolve) => setImmediate(resolve))
  const entries = lines.map((line) => JSON.parse(line))
  assert.equal(entries.length, 2, lines.join('\n'))
  const [ok, refused] = entries
  assert.equal(ok.method, 'GET')
  assert.equal(ok.route, '/api/roles')
  assert.equal(ok.status, 200)
  assert.equal(typeof ok.ms, 'number')
  assert.match(ok.reqId, /^[0-9a-f-]{36}$/)
  assert.equal(ok.tenantId, tenant.id)
  assert.equal(ok.userId, tenant.adminId)
  assert.equal(ok.code, undefined)
  assert.equal(refused.status, 422)
  assert.equal(refused.code, 'validation_failed')
  assert.ok(!lines.join('\n').includes(tenant.adminToken), 'no token in the log')
})

test('pretty lines on a terminal, JSON otherwise, LOG_FORMAT wins', () => {
  for (const [isTTY, format, json] of [
    [true, undefined, false],
    [false, undefined, true],
    [true, 'json', true],
    [false, 'pretty', false],
  ] as const) {
    const { stream, lines } = capture(isTTY)
    createLogger({ level: 'info', format, destination: stream }).info({ n: 1 }, 'hello')
    assert.ok(lines.length >= 1)
    assert.equal(lines[0]!.startsWith('{'), json, `isTTY=${isTTY} format=${format}: ${lines[0]}`)
    assert.match(lines[0]!, /hello/)
  }
})

test('a job line carries task, id and attempt, never the payload', () => {
  const { stream, lines } = capture()
  const logger = pinoWorkerLogger(createLogger({ level: 'info', format: 'json', destination: stream }))
  const job = {
    id: '42',
    task_identifier: 'notification_fanout',
    attempts: 1,
    max_attempts: 25,
    payload: { userIds: [1, 2, 3], secretish: 'x' },
  }
  logger.info('Completed task 42 (notification_fanout, 3.00ms) with success', {
    job,
    duration: 3,
    success: true,
  } as never)
  const entry = JSON.parse(lines[0]!)
  assert.equal(entry.task, 'notification_fanout')
  assert.equal(entry.jobId, '42')
  assert.equal(entry.attempt, 1)
  assert.equal(entry.duration, 3)
  assert.ok(!lines[0]!.includes('userIds') && !lines[0]!.includes('secretish'), lines[0])
})

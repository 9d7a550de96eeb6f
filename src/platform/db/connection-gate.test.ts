import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConnectionPermits } from './connection-gate.js'

/** Waiters on `permits`, each noting when it got its permit. */
function waiters(permits: ConnectionPermits, count: number) {
  const got: number[] = []
  for (let i = 0; i < count; i++) void (permits.acquire() as Promise<void>).then(() => got.push(i))
  return got
}
const settled = () => new Promise((resolve) => setImmediate(resolve))

test('connection permits: a raised bound lets the waiters in at once, in their order', async () => {
  const permits = new ConnectionPermits(1)
  assert.equal(permits.acquire(), undefined, 'the first at once')
  const got = waiters(permits, 3)
  await settled()
  assert.deepEqual(got, [])
  permits.resize(3)
  await settled()
  assert.deepEqual(got, [0, 1], 'two more permits, to the first two waiters')
  assert.equal(permits.inUse, 3)
  permits.release()
  await settled()
  assert.deepEqual(got, [0, 1, 2])
})

test('connection permits: a lowered bound hands on no permit until the holders are below it', async () => {
  const permits = new ConnectionPermits(3)
  for (let i = 0; i < 3; i++) assert.equal(permits.acquire(), undefined)
  const got = waiters(permits, 2)
  permits.resize(1)
  permits.release()
  permits.release()
  await settled()
  assert.deepEqual(got, [], 'three held, then one: none handed on above the bound')
  assert.equal(permits.inUse, 1)
  permits.release()
  await settled()
  assert.deepEqual(got, [0], 'the next one once none is held')
  assert.equal(permits.tryAcquire(), false)
  permits.release()
  await settled()
  assert.deepEqual(got, [0, 1])
  permits.release()
  assert.equal(permits.idle, true)
})

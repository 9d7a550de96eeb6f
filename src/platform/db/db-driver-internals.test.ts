/**
 * The pg and pg-cursor internals the driver basement (src/platform/db/driver/README.md) relies on: an
 * upgrade that renames or reshapes one of them fails here, not silently in production.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import pg from 'pg'
import Cursor from 'pg-cursor'
import { testDatabaseUrl } from '../../../test/helpers/test-database.js'

const root = path.resolve(import.meta.dirname, '../../..')
const manifestOf = (dir: string): { version: string; dependencies: Record<string, string> } =>
  JSON.parse(fs.readFileSync(path.join(root, dir, 'package.json'), 'utf8'))

test('pg and pg-cursor are pinned to one exact version, the one installed', () => {
  for (const name of ['pg', 'pg-cursor']) {
    const pinned = manifestOf('.').dependencies[name]!
    assert.match(pinned, /^\d+\.\d+\.\d+$/, `${name} is pinned exactly (the driver patches its internals)`)
    const installed = manifestOf(`node_modules/${name}`).version
    assert.equal(installed, pinned, `${name} installed is the pinned version`)
  }
})

test("pg-cursor's methods and state the SettlingCursor overrides or reads (driver/cursor.ts)", () => {
  const proto = Cursor.prototype as unknown as Record<string, unknown>
  for (const method of ['submit', '_getRows', '_closePortal', 'close', '_ifNoData', '_rowDescription'])
    assert.equal(typeof proto[method], 'function', `pg-cursor has ${method}()`)
  const cursor = new Cursor('select 1', [], { types: pg.types }) as unknown as Record<string, unknown>
  assert.equal(cursor.state, 'initialized')
  assert.equal(cursor._portal, null)
  assert.equal(cursor.text, 'select 1')
  assert.deepEqual(cursor.values, [])
  assert.equal(typeof cursor._conf, 'object')
  assert.equal(typeof cursor._result, 'object')
  assert.equal(typeof cursor._ifNoData, 'function', 'bound in the constructor')
  assert.equal(typeof cursor._rowDescription, 'function', 'bound in the constructor')
})

test("pg's connection bookkeeping of named statements and its socket (driver/cursor.ts, named-statements.ts)", async () => {
  const client = new pg.Client({ connectionString: testDatabaseUrl() })
  await client.connect()
  try {
    const connection = (client as unknown as { connection: Record<string, unknown> }).connection
    for (const method of ['parse', 'bind', 'describe', 'flush', 'close', 'sync', 'once', 'removeListener'])
      assert.equal(typeof connection[method], 'function', `the connection has ${method}()`)
    const stream = connection.stream as { cork?: unknown; uncork?: unknown; destroyed?: unknown }
    assert.equal(typeof stream.cork, 'function')
    assert.equal(typeof stream.uncork, 'function')
    assert.equal(typeof stream.destroyed, 'boolean')
    assert.deepEqual(connection.submittedNamedStatements, {})
    await client.query({ name: 'driver_internals_probe', text: 'select $1::int as n', values: [1] })
    assert.deepEqual(connection.parsedStatements, { driver_internals_probe: 'select $1::int as n' })
  } finally {
    await client.end()
  }
})

test("pg's type parsers and escaping the driver builds on (driver/type-parsers.ts, role-settings.ts)", () => {
  const int4Array: number = 1007
  assert.deepEqual(
    pg.types.getTypeParser(int4Array, 'text')('{1,2}'),
    [1, 2],
    'the int4[] parser reads int8[] as numbers',
  )
  assert.equal(pg.Client.prototype.escapeIdentifier('a"b'), '"a""b"')
  assert.equal(pg.Client.prototype.escapeLiteral("it's"), "'it''s'")
})

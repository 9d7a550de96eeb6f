import assert from 'node:assert/strict'
import { test } from 'node:test'
import { unroutableStatements } from './helpers/routable-statements.js'

const offending = async (sql: string) => (await unroutableStatements([sql])).flatMap((o) => o.tables)

// the check itself (test/helpers/routable-statements.ts), run over every request statement by test/run-tests.ts
test('a statement is routable when every tenant table it touches is pinned to one tenant_id', async () => {
  assert.deepEqual(await offending('select id from users where tenant_id = $1 and id = $2'), [])
  assert.deepEqual(
    await offending(
      'select u.id from users u join roles r on r.tenant_id = u.tenant_id and r.id = u.role_id where u.tenant_id = $1',
    ),
    [],
  )
  assert.deepEqual(
    await offending(
      'select u.id, array(select du.department_id from department_users du where du.tenant_id = $1 and du.user_id = u.id) from users u where u.tenant_id = $1::bigint',
    ),
    [],
  )
  assert.deepEqual(
    await offending(
      'select u.id from users u where u.tenant_id = $1 and exists (select 1 from department_users du where du.tenant_id = u.tenant_id and du.user_id = u.id)',
    ),
    [],
  )
  assert.deepEqual(await offending('update folders set name = $1 where "tenant_id" = $2 and id = any($3)'), [])
  assert.deepEqual(
    await offending('insert into notifications (tenant_id, notifiable_id) values ($1, $2), ($1, $3)'),
    [],
  )
  assert.deepEqual(await offending('select id from tenants where slug = $1'), [], 'global tables need no filter')
  assert.deepEqual(
    await offending('select tenant_id from access_tokens where token_hash = $1'),
    [],
    'named on the allow list',
  )
})

test('a tenant table without a single-tenant filter is reported', async () => {
  assert.deepEqual(await offending('select id from users where id = $1'), ['users'])
  assert.deepEqual(await offending('select id from users where tenant_id = any($1)'), ['users'])
  assert.deepEqual(await offending('select id from users where tenant_id = $1 or id = $2'), ['users'])
  assert.deepEqual(
    await offending('select u.id from users u join roles r on r.id = u.role_id where u.tenant_id = $1'),
    ['roles'],
  )
  assert.deepEqual(await offending('select u.id from users u join tenants t on t.id = u.tenant_id where t.slug = $1'), [
    'users',
  ])
  assert.deepEqual(await offending('delete from notifications where read_at < now()'), ['notifications'])
  assert.deepEqual(
    await offending(
      'select * from users where tenant_id = $1 and exists (select 1 from department_users du where du.user_id = users.id)',
    ),
    ['department_users'],
  )
  // a select-list subquery pinned only through the outer row: Citus sends the statement to every shard
  // (seen on a coordinator + 2 workers, Citus 13.2: "Task Count: 32" for the actor lookup)
  assert.deepEqual(
    await offending(
      'select u.id, array(select du.department_id from department_users du where du.tenant_id = u.tenant_id and du.user_id = u.id) from users u where u.tenant_id = $1::bigint',
    ),
    ['department_users'],
  )
})

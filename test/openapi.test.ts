import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from './helpers/build-test-app.js'

test('OpenAPI 3.1: unique operationIds, a summary everywhere, named schemas, problem+json errors, SSE, valid paths', async () => {
  const doc = (await (await buildTestApp()).inject({ method: 'GET', url: '/api/openapi.json' })).json()
  assert.match(doc.openapi, /^3\.1\./)
  const ids = new Set<string>()
  let operations = 0
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    assert.doesNotMatch(path, /[?:]/, `path template ${path}`)
    for (const [method, operation] of Object.entries<any>(item)) {
      operations++
      const where = `${method.toUpperCase()} ${path}`
      assert.match(operation.operationId ?? '', /^[a-z][A-Za-z]*(\.[a-z][A-Za-z]*)*$/, where)
      assert.ok(!ids.has(operation.operationId), `${where}: duplicate ${operation.operationId}`)
      ids.add(operation.operationId)
      assert.ok(operation.summary && operation.description, `${where} has a summary and a description`)
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (!/^[45]/.test(status)) continue
        if (path.startsWith('/scim/')) {
          // the SCIM service provider answers errors as RFC 7644 documents
          assert.deepEqual(Object.keys(response.content), ['application/scim+json'], `${where} ${status}`)
          const schema = response.content['application/scim+json'].schema
          assert.deepEqual(schema.required, ['schemas', 'status'], `${where} ${status}`)
          assert.equal(schema.properties.status.type, 'string')
          assert.ok(schema.properties.scimType)
          continue
        }
        assert.deepEqual(Object.keys(response.content), ['application/problem+json'], `${where} ${status}`)
        assert.equal(response.content['application/problem+json'].schema.$ref, '#/components/schemas/Problem')
      }
    }
  }
  assert.ok(operations > 100)
  for (const [id, path, method] of [
    ['users.list', '/api/users', 'get'],
    ['roles.update', '/api/roles/{id}', 'put'],
    ['auth.login', '/api/auth/login', 'post'],
  ]) {
    assert.equal(doc.paths[path][method].operationId, id)
  }
  for (const name of ['User', 'Role', 'Notification', 'Problem', 'Folder', 'SharedItem'])
    assert.ok(doc.components.schemas[name], name)
  assert.ok(!Object.keys(doc.components.schemas).some((name) => /^def-\d+$/.test(name)))
  assert.deepEqual(Object.keys(doc.paths['/api/notifications/stream'].get.responses['200'].content), [
    'text/event-stream',
  ])
  assert.ok(doc.paths['/users/{id}/profile-picture'].get && doc.paths['/users/{id}/profile-picture/{fileName}'].get)
})

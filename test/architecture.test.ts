import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import path from 'node:path'
import { test } from 'node:test'
import ts from 'typescript'

const root = path.resolve(import.meta.dirname, '..')
const src = path.join(root, 'src')

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await sourceFiles(full)))
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(full)
  }
  return out
}

async function imports(file: string): Promise<string[]> {
  const text = await fs.readFile(file, 'utf8')
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) =>
    path.resolve(path.dirname(file), m[1]),
  )
}

test('platform code never imports modules', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(path.join(src, 'platform'))) {
    for (const target of await imports(file))
      if (target.startsWith(path.join(src, 'modules'))) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

test('a module reaches another module only through its index.ts', async () => {
  const offenders: string[] = []
  const modulesDir = path.join(src, 'modules')
  for (const file of await sourceFiles(modulesDir)) {
    const own = path.relative(modulesDir, file).split(path.sep)[0]
    for (const target of await imports(file)) {
      if (!target.startsWith(modulesDir + path.sep)) continue
      const [other, ...rest] = path.relative(modulesDir, target).split(path.sep)
      if (other !== own && rest.join('/') !== 'index.js' && rest.length > 0)
        offenders.push(`${path.relative(root, file)} → modules/${other}/${rest.join('/')}`)
    }
  }
  assert.deepEqual(offenders, [])
})

test('only src/config.ts reads process.env', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    if (file === path.join(src, 'config.ts')) continue
    if (/process\.env/.test(await fs.readFile(file, 'utf8'))) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

test('the driver basement has one door: outside src/platform/db nothing imports db/driver/', async () => {
  const db = path.join(src, 'platform', 'db')
  const driver = path.join(db, 'driver')
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    if (file.startsWith(db + path.sep)) continue
    for (const target of await imports(file))
      if (target.startsWith(driver + path.sep)) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

test('only the driver basement touches pg-cursor (its internals are patched there, driver/README.md)', async () => {
  const driver = path.join(src, 'platform', 'db', 'driver')
  const offenders: string[] = []
  for (const file of await sourceFiles(src))
    if (!file.startsWith(driver + path.sep) && /from 'pg-cursor'/.test(await fs.readFile(file, 'utf8')))
      offenders.push(path.relative(root, file))
  assert.deepEqual(offenders, [])
})

/** Top-level statements of a source file, parsed (what runs when the file is imported). */
async function topLevelStatements(file: string): Promise<readonly ts.Statement[]> {
  const text = await fs.readFile(file, 'utf8')
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true).statements
}

/** Calls made while a statement runs at import, not inside a function it merely defines. */
function importTimeCalls(node: ts.Node): ts.CallExpression[] {
  if (ts.isFunctionLike(node) || ts.isClassLike(node)) return []
  const calls = ts.isCallExpression(node) ? [node] : []
  node.forEachChild((child) => void calls.push(...importTimeCalls(child)))
  return calls
}

const calleeName = (call: ts.CallExpression): string | undefined =>
  ts.isIdentifier(call.expression)
    ? call.expression.text
    : ts.isPropertyAccessExpression(call.expression)
      ? call.expression.name.text
      : undefined

test('nothing registers or subscribes at import: what the app is made of are the AppModule fields in appModules', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(src))
    for (const statement of await topLevelStatements(file))
      for (const call of importTimeCalls(statement)) {
        const name = calleeName(call)
        if (name && /^(register|subscribe)/i.test(name))
          offenders.push(`${path.relative(root, file)}: ${call.getText().split('(')[0]}(…)`)
      }
  assert.deepEqual(offenders, [])
})

/**
 * Module-level collections that are written after import and are no registry: caches of values derived
 * from their keys, bookkeeping of the process's own connections, and listeners added at run time by an
 * app's parts (never at import). Anything else written after import is a hidden composition root.
 */
const NOT_REGISTRIES: Record<string, string[]> = {
  'src/modules/folders/folders.resource.ts': ['cache'],
  'src/platform/auth/session-activity.ts': ['noted'],
  'src/platform/db/driver/committed-writes.ts': ['commitListeners'],
  'src/platform/db/driver/statement-text.ts': ['statements'],
  'src/platform/db/driver/type-parsers.ts': ['parsers'],
  'src/platform/keys/signing-keys.ts': ['imported'],
  'src/platform/metrics/registry.ts': ['pools'],
  'src/platform/secrets/secret-box.ts': ['boxes'],
}

const WRITES = /\.(set|add|push|unshift|splice|delete|clear)\(|\[[^\]]+\]\s*=[^=]/

test('no module-level Map, Set or array is written after import, but the listed caches', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    const text = await fs.readFile(file, 'utf8')
    for (const statement of await topLevelStatements(file)) {
      if (!ts.isVariableStatement(statement)) continue
      for (const declaration of statement.declarationList.declarations) {
        const init = declaration.initializer?.getText() ?? ''
        if (!ts.isIdentifier(declaration.name) || !/^(new (Map|Set|Array)\b|\[)/.test(init)) continue
        const name = declaration.name.text
        const written = text
          .split('\n')
          .some((line) => line.includes(name) && new RegExp(`\\b${name}(${WRITES.source})`).test(line))
        const allowed = NOT_REGISTRIES[path.relative(root, file)]?.includes(name)
        if (written && !allowed) offenders.push(`${path.relative(root, file)}: ${name}`)
      }
    }
  }
  assert.deepEqual(offenders, [])
})

test('one validator factory: only platform/validation makes an ajv or compiles a TypeBox schema', async () => {
  const factory = path.join(src, 'platform', 'validation')
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    if (file.startsWith(factory + path.sep)) continue
    const text = await fs.readFile(file, 'utf8')
    if (/new Ajv\b|from 'ajv'|from 'typebox\/compile'|\bCompile\(/.test(text)) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

/** Modules laid out one flow a file set (issue 40): SQL only in `*.queries.ts`, no file past the soft limit. */
const FLOORED_MODULES = ['identity']
const MAX_LINES = 300
/** A Kysely statement or raw SQL: a builder entry point, the `sql` tag, or a value import from kysely. */
const KYSELY_CALL =
  /\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|selectNoFrom)\(|\bsql[`<.]|^import (?!type\b)[^'"]*from 'kysely'/m

test(`${FLOORED_MODULES.join(', ')}: no file over ${MAX_LINES} lines, Kysely only in *.queries.ts`, async () => {
  const offenders: string[] = []
  for (const module of FLOORED_MODULES)
    for (const file of await sourceFiles(path.join(src, 'modules', module))) {
      const text = await fs.readFile(file, 'utf8')
      const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
      if (lines > MAX_LINES) offenders.push(`${path.relative(root, file)}: ${lines} lines`)
      if (!file.endsWith('.queries.ts') && KYSELY_CALL.test(text))
        offenders.push(`${path.relative(root, file)}: ${KYSELY_CALL.exec(text)![0]}`)
    }
  assert.deepEqual(offenders, [])
})

/**
 * Modules whose SQL is in queries files (issue 40): Kysely statements and `sql` only in `*.queries.ts`,
 * and in `*.resource.ts` for a resource's field SQL and relation loaders (docs/CONTRIBUTING-modules.md).
 */
const SQL_IN_QUERIES_MODULES = [
  ...FLOORED_MODULES,
  'access',
  'audit',
  'automations',
  'backups',
  'calendar',
  'content',
  'departments',
  'entity-permissions',
  'filemanager',
  'folders',
  'forms',
  'infoboard',
  'languages',
  'limits',
  'manuals',
  'notifications',
  'retention',
  'roles',
  'scim',
  'shared-items',
  'sync',
  'tasks',
  'tenants',
  'users',
]
/** Files of those modules still holding statements, being rewritten by others: this list only shrinks. */
const SQL_OUTSIDE_QUERIES: readonly string[] = []

test(`${SQL_IN_QUERIES_MODULES.join(', ')}: Kysely only in *.queries.ts and *.resource.ts, but the listed files`, async () => {
  const offenders: string[] = []
  const listed: string[] = []
  for (const module of SQL_IN_QUERIES_MODULES)
    for (const file of await sourceFiles(path.join(src, 'modules', module))) {
      if (file.endsWith('.queries.ts') || file.endsWith('.resource.ts')) continue
      const relative = path.relative(root, file)
      const found = KYSELY_CALL.exec(await fs.readFile(file, 'utf8'))
      if (!SQL_OUTSIDE_QUERIES.includes(relative)) {
        if (found) offenders.push(`${relative}: ${found[0]}`)
      } else if (found) listed.push(relative)
      else offenders.push(`${relative}: holds no SQL now, drop it from SQL_OUTSIDE_QUERIES`)
    }
  assert.deepEqual(offenders, [])
  // a listed file that is gone, or of a module not checked, is dropped from the list too
  assert.deepEqual(listed.sort(), [...SQL_OUTSIDE_QUERIES].sort())
})

test('one escalation guard: modules ask holdsEvery/assertHoldsEvery (platform/auth/permissions.ts), never restate it', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(path.join(src, 'modules'))) {
    const text = await fs.readFile(file, 'utf8')
    // a message of the rule spelled out, or "every permission held" checked by hand with can()
    if (/['"`][^'"`\n]*you do not hold|\.every\(\s*\(?\s*\w+\s*\)?\s*=>\s*can\(/.test(text))
      offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

// the audit log's writers: the audit module defines them (audit-log*.ts), the audit module's event subscriber calls them
const AUDIT_WRITERS = [
  'modules/audit/audit-log.ts',
  'modules/audit/audit-log.queries.ts',
  'modules/audit/audit.events.ts',
]

test('one audit path: an audited change is a domain event; only the audit subscriber writes audit records', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    if (AUDIT_WRITERS.includes(path.relative(src, file).split(path.sep).join('/'))) continue
    const text = await fs.readFile(file, 'utf8')
    // the writers by name (a call or an import), or an insert of audit records written by hand
    if (
      /\b(recordAudits?|auditInsert|auditColumns)\b|insert\s+into\s+audit_log|insertInto\(\s*['"]audit_log/i.test(text)
    )
      offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [], "record a domain event (recordDomainEvent) in the change's transaction instead")
})

/**
 * `platform/` knows no domain (issue 40, finding 4): no file under `src/platform/` names a module (a folder
 * of `src/modules/`, kebab or camel case, alone or as the head of `<module>.x` / `<module>:x`), a table
 * owned by a module (every table of the schema registry `TABLE_CLASSES` but `PLATFORM_TABLES`) or a
 * permission key (`PERMISSIONS` of the roles module, but `*`). "Names" means inside a string or the text of a template
 * literal (SQL, keys, event types), not in comments, imports or identifiers; a bare module name counts
 * in a one-word string (a key, a tag), not as a word of prose or SQL (a table is caught as a table).
 */
const PLATFORM_TABLES: Record<string, string> = {
  kysely_migration: 'the migrator (platform/db/migrate.ts)',
  kysely_migration_lock: 'the migrator (platform/db/migrate.ts)',
  domain_events: 'the event log (platform/events)',
  signing_keys: 'the signing keys (platform/keys)',
  push_vapid_keys: 'the VAPID keys (platform/keys)',
  outbound_host_leases: 'per-host delivery slots (platform/outbound-http)',
  rate_limit_counters: 'the rate limiter (platform/limits)',
  tenant_limits: 'the fair-use limits (platform/limits)',
  sync_clocks: 'the change feed clock (platform/sync)',
  sync_changes: 'the change log (platform/sync)',
  sync_access_changes: 'the change log of access changes (platform/sync)',
}

/**
 * Files and folders under `src/platform/` that still name domain words, with why: this list only
 * shrinks. A key ending in `/` covers a folder.
 */
const PLATFORM_NAMES_DOMAIN: Record<string, string> = {
  'src/platform/db/migrations/':
    'the one numbered, forward-only history of every table (CONTRIBUTING-modules.md); applied migrations are frozen',
  'src/platform/access/access-rule.ts':
    "THE grant rule reads the grants (entity_permissions) and a user's departments; its home is to be entity-permissions",
  'src/platform/auth/actor.ts':
    "an actor may be a SCIM token (scimTokenId; audited and rate-limited as 'scim:<id>', actorLabel)",
  'src/platform/auth/authenticate.ts': 'the actor is read from users, roles, department_users and access_tokens',
  'src/platform/auth/tokens.ts': 'access tokens are issued for users (users, user_totp)',
  'src/platform/auth/session-activity.ts':
    "session activity is written beside the tokens (the identity module's table)",
  'src/platform/db/change-notices.ts':
    'the actor cache is invalidated by changes of users, roles, department_users, access_tokens',
  'src/platform/http/openapi.ts': 'the OpenAPI tags and security schemes name the access and scim surfaces',
}

const FILE_EXTENSIONS = new Set(['md', 'json', 'jsonl', 'csv', 'ts', 'js', 'sql', 'html'])

/** The strings and template-literal texts of a source file (what it names), without comments or imports. */
async function namedTexts(file: string): Promise<string[]> {
  const text = await fs.readFile(file, 'utf8')
  const out: string[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return
    if (ts.isStringLiteralLike(node)) out.push(node.text)
    else if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) out.push(node.text)
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) return
    node.forEachChild(visit)
  }
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true))
  return out
}

test('platform/ names no module, no table of a module and no permission key (issue 40, finding 4)', async () => {
  const { TABLE_CLASSES } = await import('../src/platform/db/table-classes.js')
  const { PERMISSIONS } = await import('../src/modules/roles/index.js')
  const modules = (await fs.readdir(path.join(src, 'modules'), { withFileTypes: true }))
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => [entry.name, entry.name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase())])
  const tables = Object.keys(TABLE_CLASSES).filter((table) => !(table in PLATFORM_TABLES))
  const permissions = new Set(PERMISSIONS.filter((permission) => permission !== '*'))
  const offenders: string[] = []
  const excused = new Set<string>()
  for (const file of await sourceFiles(path.join(src, 'platform'))) {
    const relative = path.relative(root, file).split(path.sep).join('/')
    const exception = Object.keys(PLATFORM_NAMES_DOMAIN).find((key) =>
      key.endsWith('/') ? relative.startsWith(key) : relative === key,
    )
    const named = new Set<string>()
    for (const text of await namedTexts(file)) {
      for (const word of text.match(/[A-Za-z_][\w-]*(?:[.:][\w*]+)?/g) ?? []) {
        const [head, tail] = word.split(/[.:]/)
        if (tail && FILE_EXTENSIONS.has(tail)) continue
        if (permissions.has(word)) named.add(`permission ${word}`)
        else if (word !== head ? modules.includes(head) : modules.includes(word) && !/\s/.test(text))
          named.add(`module ${word}`)
      }
      for (const table of tables) if (new RegExp(`\\b${table}\\b`).test(text)) named.add(`table ${table}`)
    }
    if (named.size === 0) continue
    if (exception) excused.add(exception)
    else offenders.push(`${relative}: ${[...named].sort().join(', ')}`)
  }
  assert.deepEqual(offenders, [], 'pass the domain in through AppModule fields or parameters from the module')
  // an exception no file needs any more is dropped from the list
  assert.deepEqual([...excused].sort(), Object.keys(PLATFORM_NAMES_DOMAIN).sort())
})

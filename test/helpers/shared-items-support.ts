import { sql } from 'kysely'
import { hasGrantAccess } from '../../src/platform/access/access-rule.js'
import { can } from '../../src/platform/auth/permissions.js'
import type { Db } from '../../src/platform/db/schema.js'
import { appModules } from '../../src/modules/index.js'
import { SHARED_ITEM_TYPES, type ShareTargetDef } from '../../src/modules/shared-items/index.js'
import { composeApp } from '../../src/platform/composition.js'
import { buildTestApp } from './build-test-app.js'
import type { GivenTenant } from './given.js'

/**
 * Test-only share targets for every shared item type, backed by one throwaway table, so that the
 * shared items module can be tested before (and independently of) the content modules. View rule
 * mirrors the real ones: the module's `.view` permission plus the record's own `view` grants.
 */

const MODULE_OF: Record<string, string> = {
  calendarEvent: 'calendar',
  filemanagerDirectory: 'filemanager',
  filemanagerFile: 'filemanager',
  form: 'forms',
  formMessage: 'forms',
  infoboardComment: 'infoboard',
  infoboardPost: 'infoboard',
  manualChapter: 'manuals',
  manualEntry: 'manuals',
  taskExecution: 'tasks',
}

let ready: Promise<void> | undefined

/**
 * Creates the table (once per process) and composes the test app with a module of test targets for
 * every alias of the type table (listed last: they replace the content modules' own).
 */
export function useTestShareTargets(db: Db): Promise<void> {
  ready ??= (async () => {
    await sql`create table if not exists test_share_targets (
      id bigint primary key default nextval('global_id_seq'), tenant_id bigint not null, alias text not null,
      title text, has_poster boolean not null default false)`
      .execute(db)
      .catch(async (error) => {
        // a parallel test process may have created it at the same moment
        if (!(await sql`select to_regclass('test_share_targets') as t`.execute(db)).rows[0]) throw error
      })
    const shareTargets = Object.keys(SHARED_ITEM_TYPES).map((alias): ShareTargetDef => {
      const isFile = alias === 'filemanagerFile'
      return {
        alias,
        sharedItemTypes: [alias],
        idType: 'integer',
        async exists(db, tenantId, id) {
          const { rows } =
            await sql`select 1 from test_share_targets where tenant_id = ${tenantId} and alias = ${alias} and id = ${id}`.execute(
              db,
            )
          return rows.length > 0
        },
        async canView(db, actor, id) {
          return can(actor, `${MODULE_OF[alias]}.view`) && hasGrantAccess(db, actor, 'view', alias, id)
        },
        async describe(id, { appUrl, baseUrl, db, tenantId, actor }) {
          const { rows } = await sql<{
            has_poster: boolean
            title: string | null
          }>`select has_poster, title from test_share_targets
            where tenant_id = ${tenantId} and alias = ${alias} and id = ${id}`.execute(db)
          if (!rows[0]) return undefined
          const target = `${appUrl}/test/${alias}/${id}`
          const files = `${baseUrl}/api/filemanager/files/${id}`
          const urls = !isFile
            ? { target }
            : {
                target,
                showFileContent: `${files}/content`,
                downloadFileContent: `${files}/download`,
                ...(rows[0].has_poster ? { filePoster: `${files}/poster` } : {}),
              }
          return {
            urls,
            title: rows[0].title,
            visible: can(actor, `${MODULE_OF[alias]}.view`) && (await hasGrantAccess(db, actor, 'view', alias, id)),
          }
        },
        async loadFields(db, tenantId, ids) {
          const { rows } = await sql<{ id: string; title: string | null }>`select id, title from test_share_targets
            where tenant_id = ${tenantId} and alias = ${alias} and id = any(${ids.map(String)}::bigint[])`.execute(db)
          return new Map(rows.map((row) => [String(row.id), { id: Number(row.id), title: row.title }]))
        },
      }
    })
    // after the test app (built once per file): its build composes `appModules` alone
    await buildTestApp()
    composeApp([...appModules, { name: 'test-share-targets', shareTargets }])
  })()
  return ready
}

/** A test target of `alias` in the tenant. */
export async function givenTarget(
  db: Db,
  tenant: GivenTenant,
  alias: string,
  options: { title?: string; hasPoster?: boolean } = {},
): Promise<number> {
  const { rows } = await sql<{ id: string }>`insert into test_share_targets (tenant_id, alias, title, has_poster)
    values (${tenant.id}, ${alias}, ${options.title ?? `${alias} title`}, ${options.hasPoster ?? false}) returning id`.execute(
    db,
  )
  return Number(rows[0].id)
}

import { sql } from 'kysely'
import type { Db, FolderType } from '../../platform/db/schema.js'

export interface FolderRow {
  id: number
  type: FolderType
  parent_id: number | null
  lang_id: string
  path: number[]
  icon_id: number | null
  show_on_menu: boolean
}

const rowColumns = ['id', 'type', 'parent_id', 'lang_id', 'path', 'icon_id', 'show_on_menu'] as const

/** The tenant's folders, aliased `f` (base of list and show queries). */
export const selectFolders = (db: Db, tenantId: number) =>
  db.selectFrom('folders as f').where('f.tenant_id', '=', tenantId)

export function findFolder(
  db: Db,
  tenantId: number,
  id: number,
  { forUpdate = false } = {},
): Promise<FolderRow | undefined> {
  const query = db.selectFrom('folders').select(rowColumns).where('tenant_id', '=', tenantId).where('id', '=', id)
  return (forUpdate ? query.forUpdate() : query).executeTakeFirst()
}

/**
 * Serializes structural changes (create under a parent, move, delete) of one tenant's folder tree,
 * so that two concurrent moves can never build a cycle from two individually valid checks.
 */
export async function lockFolderTree(db: Db, tenantId: number): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`folders:${tenantId}`}, 0))`.execute(db)
}

export async function nextFolderId(db: Db): Promise<number> {
  const { rows } = await sql<{ id: string | number }>`select nextval('global_id_seq') as id`.execute(db)
  return Number(rows[0].id)
}

export function insertFolder(
  db: Db,
  tenantId: number,
  values: {
    id: number
    type: FolderType
    parent_id: number | null
    lang_id: string
    icon_id: number | null
    show_on_menu: boolean
    user_id: number
    path: number[]
  },
) {
  return db
    .insertInto('folders')
    .values({ tenant_id: tenantId, ...values })
    .returning('id')
    .executeTakeFirstOrThrow()
}

/** Stores `name` as the folder's translation in `langId`, replacing only that one. */
export function upsertTranslation(db: Db, tenantId: number, folderId: number, langId: string, name: string) {
  // the time in VALUES, not in DO UPDATE SET: Citus refuses non-immutable functions there (docs/citus.md)
  return db
    .insertInto('folder_translations')
    .values({ tenant_id: tenantId, folder_id: folderId, lang_id: langId, name, updated_at: sql<Date>`now()` })
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'folder_id', 'lang_id'])
        .doUpdateSet({ name, updated_at: sql<Date>`excluded.updated_at` }),
    )
    .execute()
}

export function updateFolder(
  db: Db,
  tenantId: number,
  id: number,
  patch: { icon_id?: number | null; show_on_menu?: boolean; user_id: number },
) {
  return db
    .updateTable('folders')
    .set({ ...patch, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()
}

/** Re-roots the subtree of `folder` under `newParent` (null = top level): parent_id and every path. */
export async function moveSubtree(
  db: Db,
  tenantId: number,
  folder: FolderRow,
  newParent: FolderRow | null,
): Promise<void> {
  const prefix = newParent?.path ?? []
  // path[k:] of a descendant starts with the moved folder's own id (k = its depth)
  await sql`update folders set path = ${prefix}::bigint[] || path[${folder.path.length}:]
    where tenant_id = ${tenantId} and path @> array[${folder.id}]::bigint[]`.execute(db)
  await db
    .updateTable('folders')
    .set({ parent_id: newParent?.id ?? null })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', folder.id)
    .execute()
}

/** The folder and every descendant, at any depth. */
export async function selectSubtreeIds(db: Db, tenantId: number, id: number): Promise<number[]> {
  const rows = await db
    .selectFrom('folders')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`path @> array[${id}]::bigint[]`)
    .orderBy('id')
    .execute()
  return rows.map((r) => r.id)
}

/** Deletes folders (translations cascade); one statement, so parent links within the set never block it. */
export function deleteFolders(db: Db, tenantId: number, ids: number[]) {
  return db.deleteFrom('folders').where('tenant_id', '=', tenantId).where('id', 'in', ids).execute()
}

export async function tenantSystemLanguage(db: Db, tenantId: number): Promise<string> {
  const row = await db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirst()
  return row?.settings?.system_language ?? 'en-US'
}

export function selectTranslations(db: Db, tenantId: number, folderIds: number[]) {
  return db
    .selectFrom('folder_translations')
    .select(['folder_id', 'lang_id', 'name'])
    .where('tenant_id', '=', tenantId)
    .where('folder_id', 'in', folderIds)
    .orderBy('folder_id')
    .orderBy('lang_id')
    .execute()
}

/** Basic fields of folders with the name in their primary language (the grant `targetEntity` relation). */
export function selectBasicFolders(db: Db, tenantId: number, ids: number[]) {
  return db
    .selectFrom('folders as f')
    .select(['f.id', 'f.type', 'f.parent_id', 'f.lang_id', 'f.show_on_menu', 'f.created_at', 'f.updated_at'])
    .select(
      sql<string>`(select t.name from folder_translations t where t.tenant_id = ${tenantId} and t.folder_id = f.id
      order by (t.lang_id = f.lang_id) desc, t.lang_id limit 1)`.as('name'),
    )
    .where('f.tenant_id', '=', tenantId)
    .where('f.id', 'in', ids)
    .execute()
}

/** Sets one folder-referencing column to null where it names one of `folderIds`; returns the ids of the rows. */
export async function detachFolderReference(
  db: Db,
  tenantId: number,
  { table, column }: { table: string; column: string },
  folderIds: number[],
): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`update ${sql.table(table)} set ${sql.ref(column)} = null
    where tenant_id = ${tenantId} and ${sql.ref(column)} = any(${folderIds}::bigint[]) returning id::text as id`.execute(
    db,
  )
  return rows.map((row) => row.id)
}

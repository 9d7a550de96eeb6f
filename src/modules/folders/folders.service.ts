import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import { diff } from '../audit/index.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { FieldErrorCollector, forbidden, invalidField, notFound } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import { deleteEntityPermissionsOnTargets, syncEntityPermissions } from '../entity-permissions/index.js'
import { languageExists } from '../languages/index.js'
import { managePermission } from './folder-types.js'
import { detachFolderReferences } from './folder-references.js'
import { canAdministrateFolder } from './folders.access.js'
import * as queries from './folders.queries.js'
import { folderResource } from './folders.resource.js'
import type { CreateFolderBody, UpdateFolderBody } from './folders.schemas.js'
import { folderVisibleSql } from './folders-visibility.queries.js'

export type FoldersService = ReturnType<typeof createFoldersService>

export function createFoldersService({ db }: Pick<AppDeps, 'db'>) {
  const ctx = (actor: Actor, trx: Db = db) => ({ db: trx, tenantId: actor.tenantId, actor })

  async function findVisibleFolder(
    trx: Db,
    actor: Actor,
    id: number,
    forUpdate = false,
  ): Promise<queries.FolderRow | undefined> {
    const visible = await queries
      .selectFolders(trx, actor.tenantId)
      .select('f.id')
      .where('f.id', '=', id)
      .where(folderVisibleSql(actor, 'f'))
      .executeTakeFirst()
    return visible && (await queries.findFolder(trx, actor.tenantId, id, { forUpdate }))
  }

  /** The folder if the actor can see it (404 otherwise: existence does not leak). */
  async function requireVisibleFolder(trx: Db, actor: Actor, id: number): Promise<queries.FolderRow> {
    const folder = await findVisibleFolder(trx, actor, id, true)
    if (!folder) throw notFound('Folder')
    return folder
  }

  /** A parent must exist, be visible to the actor and have the same type; 422 on `parent_id` otherwise. */
  async function checkParent(trx: Db, actor: Actor, parentId: number, type: string): Promise<queries.FolderRow> {
    const parent = await findVisibleFolder(trx, actor, parentId)
    if (!parent) throw invalidField('parent_id', `no folder with id ${parentId} exists`)
    if (parent.type !== type)
      throw invalidField('parent_id', `the parent folder has type "${parent.type}", not "${type}"`)
    return parent
  }

  async function checkLanguage(trx: Db, langId: string | undefined): Promise<void> {
    if (langId !== undefined && !(await languageExists(trx, langId)))
      throw invalidField('lang_id', `unknown language "${langId}"`)
  }

  function checkName(name: string | undefined): void {
    if (name !== undefined && name.trim() === '') throw invalidField('name', 'must not be blank')
  }

  /** The stored folder presented for its writer (visibility is not re-checked: grants may exclude them). */
  function presentFolder(actor: Actor, id: number, trx: Db = db) {
    return showResource(
      ctx(actor, trx),
      folderResource(actor.langId),
      queries.selectFolders(trx, actor.tenantId).where('f.id', '=', id),
      {},
      'Folder',
    )
  }

  const visibleFolders = ({ tenantId, actor }: { tenantId: number; actor: Actor }) =>
    queries.selectFolders(db, tenantId).where(folderVisibleSql(actor, 'f'))

  /** Lists the folders the actor may see; filters, sort and the access rule run in one SQL statement. */
  async function listFolders(actor: Actor, query: RawListQuery) {
    return listResource(ctx(actor), folderResource(actor.langId), { build: visibleFolders, values: { actor } }, query)
  }

  /** Shows one visible folder. */
  async function getFolder(actor: Actor, id: number, query: RawListQuery = {}) {
    const base = queries.selectFolders(db, actor.tenantId).where('f.id', '=', id).where(folderVisibleSql(actor, 'f'))
    return showResource(ctx(actor), folderResource(actor.langId), base, query, 'Folder')
  }

  /** Creates a folder of a type whose module the actor manages, with its name and optional grants. */
  async function createFolder(actor: Actor, body: CreateFolderBody) {
    requirePermission(actor, managePermission(body.type))
    checkName(body.name)
    const id = await db.transaction().execute(async (trx) => {
      await checkLanguage(trx, body.lang_id)
      const langId = body.lang_id ?? (await queries.tenantSystemLanguage(trx, actor.tenantId))
      let parent: queries.FolderRow | null = null
      if (body.parent_id != null) {
        await queries.lockFolderTree(trx, actor.tenantId)
        parent = await checkParent(trx, actor, body.parent_id, body.type)
      }
      const folderId = await queries.nextFolderId(trx)
      await queries.insertFolder(trx, actor.tenantId, {
        id: folderId,
        type: body.type,
        parent_id: parent?.id ?? null,
        lang_id: langId,
        icon_id: body.icon_id ?? null,
        show_on_menu: body.show_on_menu ?? false,
        user_id: actor.userId,
        path: [...(parent?.path ?? []), folderId],
      })
      await queries.upsertTranslation(trx, actor.tenantId, folderId, langId, body.name)
      if (body.entity_permissions) await syncEntityPermissions(trx, actor, 'folder', folderId, body.entity_permissions)
      await recordDomainEvent(trx, {
        type: 'folder.created',
        tenantId: actor.tenantId,
        actorId: actor.userId,
        subjectType: 'folder',
        subjectId: folderId,
        data: { type: body.type, parent_id: parent?.id ?? null, lang_id: langId, name: body.name },
        audit: diff(undefined, {
          type: body.type,
          parent_id: parent?.id ?? null,
          lang_id: langId,
          name: body.name,
          icon_id: body.icon_id ?? null,
          show_on_menu: body.show_on_menu ?? false,
        }),
      })
      return folderId
    })
    return presentFolder(actor, id)
  }

  /** Updates a folder the actor administrates: move (no cycles), name per language, flags, grants. */
  async function updateFolder(actor: Actor, id: number, body: UpdateFolderBody) {
    checkName(body.name)
    await db.transaction().execute(async (trx) => {
      if (body.parent_id !== undefined) await queries.lockFolderTree(trx, actor.tenantId)
      const folder = await requireVisibleFolder(trx, actor, id)
      if (!(await canAdministrateFolder(trx, actor, folder)))
        throw forbidden('Changing this folder requires administrate access on it')
      const problems = new FieldErrorCollector()
      if (body.type !== undefined && body.type !== folder.type) problems.add('type', 'cannot be changed')
      problems.throwIfAny()
      await checkLanguage(trx, body.lang_id)

      if (body.parent_id !== undefined && body.parent_id !== folder.parent_id) {
        const parent = body.parent_id === null ? null : await checkParent(trx, actor, body.parent_id, folder.type)
        if (parent?.path.includes(folder.id))
          throw invalidField('parent_id', 'cannot move a folder under itself or one of its descendants')
        await queries.moveSubtree(trx, actor.tenantId, folder, parent)
      }
      const nameLang = body.lang_id ?? folder.lang_id
      // the stored values, for the audit record's "before" (the row is locked by requireVisibleFolder)
      const oldName =
        body.name === undefined
          ? undefined
          : ((await queries.selectTranslations(trx, actor.tenantId, [id])).find((t) => t.lang_id === nameLang)?.name ??
            null)
      if (body.name !== undefined) await queries.upsertTranslation(trx, actor.tenantId, id, nameLang, body.name)
      await queries.updateFolder(trx, actor.tenantId, id, {
        icon_id: body.icon_id,
        show_on_menu: body.show_on_menu,
        user_id: actor.userId,
      })
      if (body.entity_permissions) await syncEntityPermissions(trx, actor, 'folder', id, body.entity_permissions)
      const { entity_permissions: grants, ...changes } = body
      await recordDomainEvent(trx, {
        type: 'folder.updated',
        tenantId: actor.tenantId,
        actorId: actor.userId,
        subjectType: 'folder',
        subjectId: id,
        data: { changes, entity_permissions_replaced: grants !== undefined },
        audit: diff(
          { ...folder, name: oldName },
          { parent_id: body.parent_id, icon_id: body.icon_id, show_on_menu: body.show_on_menu, name: body.name },
        ),
      })
    })
    return presentFolder(actor, id)
  }

  /**
   * Deletes a folder and its whole subtree in one transaction: grants, translations, and every
   * registered reference to a removed folder set to null.
   */
  async function deleteFolderTree(actor: Actor, id: number) {
    await db.transaction().execute(async (trx) => {
      await queries.lockFolderTree(trx, actor.tenantId)
      const folder = await requireVisibleFolder(trx, actor, id)
      if (!(await canAdministrateFolder(trx, actor, folder)))
        throw forbidden('Deleting this folder requires administrate access on it')
      const ids = await queries.selectSubtreeIds(trx, actor.tenantId, id)
      await deleteEntityPermissionsOnTargets(trx, actor, 'folder', ids)
      const detached = await detachFolderReferences(trx, actor.tenantId, ids)
      await queries.deleteFolders(trx, actor.tenantId, ids)
      for (const folderId of ids) {
        await recordDomainEvent(trx, {
          type: 'folder.deleted',
          tenantId: actor.tenantId,
          actorId: actor.userId,
          subjectType: 'folder',
          subjectId: folderId,
          data: folderId === id ? { deleted_ids: ids, detached } : { deleted_with: id },
        })
      }
    })
  }

  return { listFolders, getFolder, createFolder, updateFolder, deleteFolderTree }
}

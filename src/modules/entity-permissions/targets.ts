import type { ViewChain } from '../../platform/access/view-chain.js'
import { composedTable } from '../../platform/composition.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { contentRecordColumns, contentRecordExists } from './entity-permissions.queries.js'

/**
 * Grant-capable target aliases (contract 20). Each module that owns a target kind lists it in its
 * `AppModule`'s `grantTargets`, so this module never switches on aliases. An alias no composed module
 * lists answers 422 "unknown or unsupported target", exactly like an unknown alias.
 */

export type TargetId = number | string
export type TargetIdType = 'integer' | 'uuid'

export interface GrantTarget {
  alias: string
  /** Table holding the targets (for readers; the functions below do the work). */
  table: string
  idType: TargetIdType
  /** Keys accepted for grants on this target, or undefined when it does not exist in the tenant. */
  allowedKeys(db: Db, tenantId: number, id: TargetId): Promise<readonly string[] | undefined>
  /** "Administrate access" on an existing target (contract 20): who may manage its grants. */
  canAdministrate(db: Db, actor: Actor, id: TargetId): Promise<boolean>
  /** The actor may see (read) the existing target; one who may neither see nor administrate it is told it does not exist. */
  isVisible(db: Db, actor: Actor, id: TargetId): Promise<boolean>
  /** Basic fields of targets for the `targetEntity` relation, keyed by `String(id)`. */
  loadBasic(db: Db, tenantId: number, ids: TargetId[]): Promise<Map<string, Record<string, unknown>>>
  /** What `isVisible` checks for an existing target, for explain access (undefined when it does not exist). */
  viewChain(db: Db, tenantId: number, id: TargetId): Promise<ViewChain | undefined>
}

/** Aliases that exist in the platform but never carry grants (contract 20). */
const WITHOUT_GRANTS = new Set(['user', 'role', 'department', 'notification'])

declare module '../../platform/app-module.js' {
  interface AppModule {
    /** The grant-capable target kinds this module owns (a later module's alias replaces an earlier one's). */
    grantTargets?: GrantTarget[]
  }
}

const registry = composedTable((modules) => {
  const targets = new Map<string, GrantTarget>()
  for (const target of modules.flatMap((module) => module.grantTargets ?? [])) {
    if (WITHOUT_GRANTS.has(target.alias)) throw new Error(`"${target.alias}" does not support entity permissions`)
    targets.set(target.alias, target)
  }
  return targets
})

/** Why an alias cannot carry grants, or the registered target. */
export function lookupTarget(alias: string): { target: GrantTarget } | { problem: string } {
  const target = registry().get(alias)
  if (target) return { target }
  if (WITHOUT_GRANTS.has(alias)) return { problem: `"${alias}" does not support entity permissions` }
  return { problem: `unknown or unsupported target "${alias}"` }
}

export const registeredTarget = (alias: string): GrantTarget | undefined => registry().get(alias)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Parses a submitted target id for the target's id type; undefined when malformed. */
export function parseTargetId(target: Pick<GrantTarget, 'idType'>, raw: unknown): TargetId | undefined {
  if (target.idType === 'uuid') return typeof raw === 'string' && UUID.test(raw) ? raw.toLowerCase() : undefined
  if (typeof raw === 'number') return Number.isSafeInteger(raw) && raw > 0 ? raw : undefined
  if (typeof raw === 'string' && /^[1-9]\d{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw))) return Number(raw)
  return undefined
}

/** A stored (text) target id as the API shows it: a number for integer targets, the string otherwise. */
export function presentTargetId(alias: string, stored: string): TargetId {
  const idType = registry().get(alias)?.idType ?? (/^\d{1,15}$/.test(stored) ? 'integer' : 'uuid')
  return idType === 'integer' ? Number(stored) : stored
}

export interface ContentTargetOptions {
  alias: string
  table: string
  /** Module whose `<module>.manage` permission gives administrate access. */
  module: string
  keys: readonly string[]
  /** Columns of the `targetEntity` relation (default `id`, `user_id`, `created_at`, `updated_at`). */
  basicColumns?: readonly string[]
  idType?: TargetIdType
  /** The content rule's single-record visibility (a `ContentResource` passes its own). */
  canView(db: Db, actor: Actor, id: number): Promise<boolean>
  /** What `canView` checks (a `ContentResource` passes its own). */
  viewChain(db: Db, tenantId: number, id: number): Promise<ViewChain | undefined>
}

/**
 * The common case for content records: a table with `tenant_id` and `id`, administrated by
 * `<module>.manage`. Content modules list `contentTarget({...})` in their `grantTargets`.
 */
export function contentTarget(options: ContentTargetOptions): GrantTarget {
  const columns = options.basicColumns ?? ['id', 'user_id', 'created_at', 'updated_at']
  return {
    alias: options.alias,
    table: options.table,
    idType: options.idType ?? 'integer',
    async allowedKeys(db, tenantId, id) {
      return (await contentRecordExists(db, options.table, tenantId, id)) ? options.keys : undefined
    },
    async canAdministrate(_db, actor) {
      return can(actor, `${options.module}.manage`)
    },
    isVisible: (db, actor, id) => options.canView(db, actor, Number(id)),
    viewChain: (db, tenantId, id) => options.viewChain(db, tenantId, Number(id)),
    async loadBasic(db, tenantId, ids) {
      const rows = await contentRecordColumns(db, options.table, columns, options.idType ?? 'integer', tenantId, ids)
      return new Map(rows.map((row) => [String(row.id), row]))
    },
  }
}

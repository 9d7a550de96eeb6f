import { sql } from 'kysely'
import type { Principal } from '../content/index.js'

/**
 * SQL: whether the principal may read the form messages at `alias`: the `viewFormMessages` rule on
 * their form and on the form's folder.
 */
export const formMessagesViewRule = (p: Principal, alias: string) =>
  sql<boolean>`(${p.grant('viewFormMessages', 'form', sql.ref(`${alias}.form_id`))} and exists (
    select 1 from forms vmf where vmf.tenant_id = ${p.tenantId} and vmf.id = ${sql.ref(`${alias}.form_id`)}
      and ${p.grant('viewFormMessages', 'folder', sql.ref('vmf.folder_id'))}))`

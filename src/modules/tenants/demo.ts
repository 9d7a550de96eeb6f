import type { Db } from '../../platform/db/schema.js'
import { hashPassword } from '../../platform/auth/passwords.js'
import { insertUser } from '../users/index.js'
import { createTenant, findTenantBySlug, type CreatedTenant } from './tenants.service.js'

export interface DemoResult {
  created: boolean
  tenant: CreatedTenant | undefined
}

/** Creates the `demo` tenant with sample users and departments unless it exists. */
export async function ensureDemoTenant(db: Db, tokenTtlDays: number): Promise<DemoResult> {
  if (await findTenantBySlug(db, 'demo')) return { created: false, tenant: undefined }
  const created = await createTenant(db, { slug: 'demo', name: 'Demo Company', adminUsername: 'admin', tokenTtlDays })
  const tenantId = created.tenant.id
  const employeePassword = await hashPassword(created.password)
  await db.transaction().execute(async (trx) => {
    const people = [['anna', 'Anna', 'Schmidt'], ['ben', 'Ben', 'Miller'], ['chloe', 'Chloé', 'Dubois'], ['deniz', 'Deniz', 'Yılmaz']]
    const users = []
    for (const [username, first, last] of people) {
      users.push(await insertUser(trx, {
        tenant_id: tenantId, username, password_hash: employeePassword, first_name: first, last_name: last,
        role_id: created.roles.employeeId, lang_id: 'en-US',
      }))
    }
    const departments = await trx.insertInto('departments')
      .values([{ tenant_id: tenantId, name: 'Store Berlin' }, { tenant_id: tenantId, name: 'Warehouse' }])
      .returning('id').execute()
    await trx.insertInto('department_users').values([
      { tenant_id: tenantId, department_id: departments[0].id, user_id: users[0].id },
      { tenant_id: tenantId, department_id: departments[0].id, user_id: users[1].id },
      { tenant_id: tenantId, department_id: departments[1].id, user_id: users[2].id },
      { tenant_id: tenantId, department_id: departments[1].id, user_id: users[3].id },
    ]).execute()
  })
  return { created: true, tenant: created }
}

export async function isDatabaseEmpty(db: Db): Promise<boolean> {
  const row = await db.selectFrom('tenants').select('id').limit(1).executeTakeFirst()
  return row === undefined
}

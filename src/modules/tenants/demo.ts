import type { Db } from '../../platform/db/schema.js'
import { hashPassword } from '../../platform/auth/passwords.js'
import { insertUser } from '../users/index.js'
import { createTenant } from './tenants.service.js'
import {
  deleteTenant,
  findTenantBySlug,
  insertDepartmentMembers,
  insertDepartments,
  markDemo,
} from './tenants.queries.js'
import { createDemoContent, type DemoRequest } from './demo-content.js'

export type { DemoRequest } from './demo-content.js'

export const DEMO_SLUG = 'demo'
export const DEMO_EMPLOYEE = 'anna'

export interface DemoResult {
  created: boolean
  /** Set when created: the password of the admin and every employee, and a shared item to open. */
  password?: string
  openSharedItemId?: string
}

export interface DemoOptions {
  tokenTtlDays: number
  /** Calls the API in-process (see src/demo.ts). */
  api: DemoRequest
  /** Deletes an existing demo tenant first. */
  reset?: boolean
}

/**
 * Creates the `demo` tenant unless a complete one exists: people first (directly, they need a known
 * password), then every module's content through the API. A demo left half-made by an interrupted
 * run is recreated (its settings say `demo: seeding` until the end).
 */
export async function ensureDemoTenant(db: Db, options: DemoOptions): Promise<DemoResult> {
  const existing = await findTenantBySlug(db, DEMO_SLUG)
  if (existing) {
    const seeded = (existing.settings as { demo?: string }).demo
    if (!options.reset && seeded !== 'seeding') return { created: false }
    await deleteTenant(db, existing.id)
  }
  const created = await createTenant(db, {
    slug: DEMO_SLUG,
    name: 'Demo Company',
    adminUsername: 'admin',
    tokenTtlDays: options.tokenTtlDays,
  })
  const tenantId = created.tenant.id
  await markDemo(db, tenantId, 'seeding')
  const employeePassword = await hashPassword(created.password)
  const people = await db.transaction().execute(async (trx) => {
    const names = [
      ['anna', 'Anna', 'Schmidt'],
      ['ben', 'Ben', 'Miller'],
      ['chloe', 'Chloé', 'Dubois'],
      ['deniz', 'Deniz', 'Yılmaz'],
    ] as const
    const users: Record<string, number> = {}
    for (const [username, first, last] of names) {
      users[username] = (
        await insertUser(trx, {
          tenant_id: tenantId,
          username,
          password_hash: employeePassword,
          first_name: first,
          last_name: last,
          role_id: created.roles.employeeId,
          lang_id: username === 'anna' || username === 'deniz' ? 'de-DE' : 'en-US',
        })
      ).id
    }
    const [store, warehouse] = await insertDepartments(trx, tenantId, ['Store Berlin', 'Warehouse'])
    await insertDepartmentMembers(trx, tenantId, [
      { departmentId: store.id, userId: users.anna },
      { departmentId: store.id, userId: users.ben },
      { departmentId: warehouse.id, userId: users.chloe },
      { departmentId: warehouse.id, userId: users.deniz },
    ])
    return {
      users: users as Record<'anna' | 'ben' | 'chloe' | 'deniz', number>,
      departments: { store: store.id, warehouse: warehouse.id },
    }
  })
  const content = await createDemoContent(db, options.api, {
    tenantId,
    adminId: created.admin.id,
    adminToken: created.token,
    password: created.password,
    ...people,
  })
  await markDemo(db, tenantId, 'complete')
  return { created: true, password: created.password, openSharedItemId: content.openSharedItemId }
}

/** The ready-to-paste requests printed after the demo is created. */
export function demoInstructions(baseUrl: string, demo: DemoResult): string[] {
  if (!demo.password) return []
  const login = `{"tenant":"${DEMO_SLUG}","username":"${DEMO_EMPLOYEE}","password":"${demo.password}"}`
  return [
    'Created the demo tenant (printed once):',
    `  tenant: ${DEMO_SLUG}   username: admin   password: ${demo.password}   (employees anna, ben, chloe, deniz: same password)`,
    "Try it (log in as an employee, list unread notifications, open a shared item's stable URL):",
    `  TOKEN=$(curl -s -X POST ${baseUrl}/api/auth/login -H 'content-type: application/json' -d '${login}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).access_token')`,
    `  curl -s -g '${baseUrl}/api/notifications?filter[read_at][null]=true&selects=id,type,data,created_at' -H "authorization: Bearer $TOKEN"`,
    `  curl -s -o /dev/null -w '%{http_code} %{redirect_url}\\n' ${baseUrl}/shared/${demo.openSharedItemId} -H "authorization: Bearer $TOKEN"`,
  ]
}

export { isDatabaseEmpty } from './tenants.queries.js'

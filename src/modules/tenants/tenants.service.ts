import { randomBytes } from 'node:crypto'
import type { Db } from '../../platform/db/schema.js'
import { hashPassword } from '../../platform/auth/passwords.js'
import { issueAccessToken } from '../../platform/auth/tokens.js'
import { AppError, invalidField } from '../../platform/http/errors.js'
import { isUniqueViolation } from '../../platform/db/pg-errors.js'
import { insertDefaultNotificationSettings } from '../notifications/index.js'
import { insertUser } from '../users/index.js'
import * as queries from './tenants.queries.js'

export const TENANT_SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/

export interface CreateTenantInput {
  slug: string
  name?: string
  adminUsername?: string
  adminPassword?: string
  tokenTtlDays: number
}

export interface CreatedTenant {
  tenant: { id: number; slug: string }
  admin: { id: number; username: string }
  token: string
  password: string
  roles: { administratorId: number; employeeId: number }
}

/** Creates a tenant with its default roles, notification settings and an admin user, and a token for the admin. */
export async function createTenant(db: Db, input: CreateTenantInput): Promise<CreatedTenant> {
  if (!TENANT_SLUG.test(input.slug)) throw invalidField('slug', 'must match ^[a-z0-9][a-z0-9-]{1,62}$')
  const password = input.adminPassword ?? randomBytes(12).toString('base64url')
  if (password.length < 8) throw invalidField('admin_password', 'must be at least 8 characters')
  const passwordHash = await hashPassword(password)
  try {
    return await db.transaction().execute(async (trx) => {
      const tenant = await queries.insertTenant(trx, input.slug, input.name ?? input.slug)
      const roles = await queries.insertDefaultRoles(trx, tenant.id)
      const administratorId = roles.find((r) => r.name === 'Administrator')!.id
      const employeeId = roles.find((r) => r.name === 'Employee')!.id
      await insertDefaultNotificationSettings(trx, tenant.id)
      const admin = await insertUser(trx, {
        tenant_id: tenant.id,
        username: input.adminUsername ?? 'admin',
        password_hash: passwordHash,
        first_name: 'Admin',
        last_name: 'User',
        role_id: administratorId,
        lang_id: 'en-US',
      })
      const { token } = await issueAccessToken(trx, tenant.id, admin.id, input.tokenTtlDays, 'cli')
      return { tenant, admin, token, password, roles: { administratorId, employeeId } }
    })
  } catch (error) {
    if (isUniqueViolation(error, 'tenants_slug_key'))
      throw new AppError(409, 'tenant_exists', `Tenant "${input.slug}" already exists`)
    throw error
  }
}

export { findTenantBySlug } from './tenants.queries.js'

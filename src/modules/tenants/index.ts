export { createTenant, findTenantBySlug, TENANT_SLUG, type CreatedTenant } from './tenants.service.js'
export { ensureDemoTenant, isDatabaseEmpty } from './demo.js'

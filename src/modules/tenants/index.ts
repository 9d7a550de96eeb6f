export { createTenant, findTenantBySlug, TENANT_SLUG, type CreatedTenant } from './tenants.service.js'
export { selectTenantIds } from './tenants.queries.js'
export {
  ensureDemoTenant,
  isDatabaseEmpty,
  demoInstructions,
  DEMO_SLUG,
  DEMO_EMPLOYEE,
  type DemoRequest,
  type DemoResult,
} from './demo.js'

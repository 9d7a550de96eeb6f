export { createTenant, findTenantBySlug, TENANT_SLUG, type CreatedTenant } from './tenants.service.js'
export {
  ensureDemoTenant,
  isDatabaseEmpty,
  demoInstructions,
  DEMO_SLUG,
  DEMO_EMPLOYEE,
  type DemoRequest,
  type DemoResult,
} from './demo.js'

import type { AppModule } from '../../platform/app-module.js'
import { purgeAuditLog } from '../../platform/audit/audit-log.js'
import { auditRoutes } from './audit.routes.js'
import { auditDomainEvent } from './audit.events.js'

export const auditModule: AppModule = {
  name: 'audit',
  routes: (app, deps) => auditRoutes(app, deps),
  jobs: ({ db, config }) => ({
    // AUDIT_RETENTION_DAYS (default 365)
    'audit:purge': async () => {
      await purgeAuditLog(db, config.auditRetentionDays)
    },
  }),
  cron: ['41 3 * * * audit:purge'],
  eventSubscribers: [auditDomainEvent],
}

import type { AppModule } from '../../platform/app-module.js'
import { purgeAuditLog } from './audit-log.queries.js'
import { auditRoutes } from './audit.routes.js'
import { auditDomainEvent } from './audit.events.js'

/** The before → after changes of an audited update, for the event's data (`{ field: [before, after] }`). */
export { diff } from './audit-log.js'
/** A black-out's erasure of the user's identifying values in the audit log (the users module's personal-data rules). */
export { anonymizeAuditFor } from './audit-log.queries.js'

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

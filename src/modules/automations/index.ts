import type { AppModule } from '../../platform/app-module.js'
import { jwksRoutes } from '../../platform/keys/jwks.routes.js'
import { recordDelivery } from '../../platform/metrics/index.js'
import { signingKeySecrets } from '../../platform/keys/signing-keys.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import { automationSecrets } from './automations.secrets.js'
import { automationsRoutes } from './automations.routes.js'
import { createAutomationsService } from './automations.service.js'
import { enqueueDeliveriesForEvents } from './automations.events.js'
import { createWebhookDeliverer, DELIVER_WEBHOOK_JOB, type DeliverWebhookPayload } from './webhook-delivery.job.js'
import { jobOf } from '../../platform/jobs/jobs.js'
import { automationsQuota } from './automations.queries.js'

export { AUTOMATION_EVENTS } from './automations.events.js'
/** For the demo: an automation stored without URL validation (inactive until an operator sets its URL). */
export { insertAutomation } from './automations.queries.js'
export { createWebhookDeliverer, DELIVER_WEBHOOK_JOB, type DeliverWebhookPayload } from './webhook-delivery.job.js'

export const automationsModule: AppModule = {
  name: 'automations',
  routes: async (app, deps) => {
    await automationsRoutes(app, { automations: createAutomationsService(deps) })
    // the platform JWKS (public): receivers verify our webhook JWTs (and later grant tokens) with it
    await jwksRoutes(app, { db: deps.db, secrets: secretBoxFor(deps.config.secrets) })
  },
  secretHolders: [signingKeySecrets, automationSecrets],
  // every committed domain event enqueues its deliveries inside the recording transaction
  eventSubscribers: [enqueueDeliveriesForEvents],
  quotaCounters: [automationsQuota],
  jobs: (deps) => {
    const deliverer = createWebhookDeliverer(deps)
    return {
      [DELIVER_WEBHOOK_JOB]: jobOf<DeliverWebhookPayload>(async (payload) => {
        recordDelivery('webhook', await deliverer.deliver(payload))
      }),
    }
  },
}

import { randomUUID } from 'node:crypto'
import { assertQuota } from '../../platform/limits/quotas.js'
import { diff } from '../audit/index.js'
import type { AppDeps } from '../../platform/app-module.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { FieldErrorCollector, notFound } from '../../platform/http/errors.js'
import type { ResolveHost } from '../../platform/outbound-http/safe-fetch.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import * as queries from './automations.queries.js'
import { AUTOMATION_EVENTS, createDeliveries, TEST_EVENT_TYPE } from './automations.events.js'
import { automationResource, deliveryResource, presentActions } from './automations.resource.js'
import type { ActionInput, CreateAutomationBody, UpdateAutomationBody } from './automations.schemas.js'
import { carryOverSecrets, openWebhookSecrets, sealWebhookSecrets, validateWebhookConfig } from './webhook-config.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import { enqueueDeliveryAttempt } from './webhook-delivery.job.js'

export const ACTION_TYPES = ['webhook'] as const
const PERMISSION = 'automations.manage'

/** An automation's event (audited, and delivered to the automations listening): `data` names the changed fields only. */
const automationEvent = (actor: Actor, type: string, id: number) => ({
  type,
  tenantId: actor.tenantId,
  actorId: actingUserId(actor),
  subjectType: 'automation',
  subjectId: id,
})

export type AutomationsService = ReturnType<typeof createAutomationsService>

export function createAutomationsService({ db, config }: AppDeps, options: { resolve?: ResolveHost } = {}) {
  const ctx = (actor: Actor) => ({ db, tenantId: actor.tenantId, actor })
  const secrets = secretBoxFor(config.secrets)
  const urlOptions = { allowPrivateNetworks: config.webhooks.allowPrivateNetworks, resolve: options.resolve }

  async function checkAction(
    action: ActionInput,
    path: string,
    errors: FieldErrorCollector,
  ): Promise<queries.StoredAction | undefined> {
    const typePath = path ? `${path}.type` : 'type'
    if (!ACTION_TYPES.some((type) => type === action.type)) {
      errors.add(typePath, `unknown action type "${action.type}" (known: ${ACTION_TYPES.join(', ')})`)
      return undefined
    }
    const config = await validateWebhookConfig(action.config, path ? `${path}.config` : 'config', errors, urlOptions)
    // stored sealed: secrets at rest are AES-256-GCM (platform/secrets)
    return config ? { type: action.type, config: sealWebhookSecrets(config, secrets) } : undefined
  }

  async function checkActions(actions: ActionInput[], errors: FieldErrorCollector): Promise<queries.StoredAction[]> {
    const checked = await Promise.all(actions.map((action, i) => checkAction(action, `actions.${i}`, errors)))
    return checked.filter((a): a is queries.StoredAction => a !== undefined)
  }

  const openedAction = (stored: queries.StoredAction | undefined) =>
    stored && stored.type === 'webhook' ? { ...stored, config: openWebhookSecrets(stored.config, secrets) } : stored

  function checkEvent(event: string | undefined, errors: FieldErrorCollector): void {
    if (event !== undefined && event !== '*' && !AUTOMATION_EVENTS.includes(event))
      errors.add('event', `unknown event type "${event}"`)
  }

  /** Lists the tenant's automations (secrets redacted). */
  async function listAutomations(actor: Actor, query: RawListQuery) {
    requirePermission(actor, PERMISSION)
    return listResource(ctx(actor), automationResource, queries.selectAutomations(db, actor.tenantId), query)
  }

  /** Shows one automation (secrets redacted). */
  async function getAutomation(actor: Actor, id: number, query: RawListQuery = {}) {
    requirePermission(actor, PERMISSION)
    return showResource(
      ctx(actor),
      automationResource,
      queries.selectAutomations(db, actor.tenantId).where('a.id', '=', id),
      query,
      'Automation',
    )
  }

  /** Creates an automation after validating its event and every action's config. */
  async function createAutomation(actor: Actor, body: CreateAutomationBody) {
    requirePermission(actor, PERMISSION)
    const errors = new FieldErrorCollector()
    checkEvent(body.event, errors)
    const actions = await checkActions(body.actions, errors)
    errors.throwIfAny()
    const { id } = await db.transaction().execute(async (trx) => {
      await assertQuota(trx, actor.tenantId, queries.automationsQuota, config.limits.quotas)
      const row = await queries.insertAutomation(trx, actor.tenantId, {
        name: body.name,
        event: body.event,
        active: body.active ?? true,
        actions,
        userId: actor.userId,
      })
      const changes = diff(undefined, {
        name: body.name,
        event: body.event,
        active: body.active ?? true,
        actions: presentActions(actions),
      })
      await recordDomainEvent(trx, {
        ...automationEvent(actor, 'automation.created', row.id),
        data: { changed: Object.keys(changes) },
        audit: changes,
      })
      return row
    })
    return getAutomation(actor, id)
  }

  /** Updates an automation; `actions`, when sent, replaces the list (omitted secrets are kept per index). */
  async function updateAutomation(actor: Actor, id: number, body: UpdateAutomationBody) {
    requirePermission(actor, PERMISSION)
    const existing = await queries.findAutomation(db, actor.tenantId, id)
    if (!existing) throw notFound('Automation')
    const errors = new FieldErrorCollector()
    checkEvent(body.event, errors)
    const incoming = body.actions?.map((a, i) => carryOverSecrets(a, openedAction(existing.actions[i])))
    const actions = incoming ? await checkActions(incoming, errors) : undefined
    errors.throwIfAny()
    await db.transaction().execute(async (trx) => {
      // the stored row, locked, as the audit record's "before" (actions as clients see them: secrets masked)
      const stored = await queries.findAutomationForUpdate(trx, actor.tenantId, id)
      if (!stored) throw notFound('Automation')
      await queries.updateAutomation(trx, actor.tenantId, id, {
        name: body.name,
        event: body.event,
        active: body.active,
        actions,
      })
      const before = { ...stored, actions: presentActions(stored.actions as queries.StoredAction[]) }
      const changes = diff(before, {
        name: body.name,
        event: body.event,
        active: body.active,
        actions: actions && presentActions(actions),
      })
      await recordDomainEvent(trx, {
        ...automationEvent(actor, 'automation.updated', id),
        data: { changed: Object.keys(changes) },
        audit: changes,
      })
    })
    return getAutomation(actor, id)
  }

  /** Deletes an automation and its delivery log; pending attempts become no-ops. */
  async function deleteAutomation(actor: Actor, id: number) {
    requirePermission(actor, PERMISSION)
    await db.transaction().execute(async (trx) => {
      const deleted = await queries.deleteAutomation(trx, actor.tenantId, id)
      if (!deleted) throw notFound('Automation')
      await recordDomainEvent(trx, automationEvent(actor, 'automation.deleted', id))
    })
  }

  /** Validates one action `{type, config}` without storing it. */
  async function validateAction(actor: Actor, action: ActionInput) {
    requirePermission(actor, PERMISSION)
    const errors = new FieldErrorCollector()
    await checkAction(action, '', errors)
    errors.throwIfAny()
    return { valid: true as const }
  }

  /** Sends a synthetic `automation.test` event to every action of the automation (active or not). */
  async function testAutomation(actor: Actor, id: number) {
    requirePermission(actor, PERMISSION)
    const automation = await queries.findAutomation(db, actor.tenantId, id)
    if (!automation) throw notFound('Automation')
    const event = {
      id: randomUUID(),
      type: TEST_EVENT_TYPE,
      data: { automation_id: automation.id, automation_name: automation.name, test: true },
    }
    const deliveryIds = await db
      .transaction()
      .execute((trx) => createDeliveries(trx, actor.tenantId, [automation], event))
    return { delivery_ids: deliveryIds }
  }

  /** The automation's delivery log, newest first. */
  async function listDeliveries(actor: Actor, id: number, query: RawListQuery) {
    requirePermission(actor, PERMISSION)
    if (!(await queries.findAutomation(db, actor.tenantId, id))) throw notFound('Automation')
    return listResource(ctx(actor), deliveryResource, queries.selectDeliveries(db, actor.tenantId, id), query)
  }

  async function getDelivery(actor: Actor, id: number, deliveryId: number) {
    return showResource(
      ctx(actor),
      deliveryResource,
      queries.selectDeliveries(db, actor.tenantId, id).where('d.id', '=', deliveryId),
      {},
      'Delivery',
    )
  }

  /** Starts a new attempt series for a delivery (same event, same `webhook-id`). */
  async function redeliver(actor: Actor, id: number, deliveryId: number) {
    requirePermission(actor, PERMISSION)
    await db.transaction().execute(async (trx) => {
      const restarted = await queries.restartDelivery(trx, actor.tenantId, id, deliveryId)
      if (!restarted) throw notFound('Delivery')
      await enqueueDeliveryAttempt(trx, { tenantId: actor.tenantId, deliveryId, series: restarted.series, attempt: 1 })
    })
    return getDelivery(actor, id, deliveryId)
  }

  return {
    listAutomations,
    getAutomation,
    createAutomation,
    updateAutomation,
    deleteAutomation,
    validateAction,
    testAutomation,
    listDeliveries,
    redeliver,
  }
}

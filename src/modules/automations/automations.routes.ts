import type { App } from '../../platform/app-module.js'
import { Type } from 'typebox'
import { errorResponses, IdParamsSchema, NoContentSchema } from '../../platform/http/schemas.js'
import { listQuerySchema, showQuerySchema } from '../../platform/query/list-query-schema.js'
import { sendList } from '../../platform/http/list-response.js'
import {
  ActionInputSchema,
  AutomationSchema,
  CreateAutomationBodySchema,
  DeliveryParamsSchema,
  DeliverySchema,
  TestResponseSchema,
  UpdateAutomationBodySchema,
  ValidateActionResponseSchema,
} from './automations.schemas.js'
import { automationResource, deliveryResource } from './automations.resource.js'
import type { AutomationsService } from './automations.service.js'

const base = '/api/administration/automations'

export async function automationsRoutes(app: App, { automations }: { automations: AutomationsService }): Promise<void> {
  const tags = ['automations']
  app.get(
    base,
    {
      schema: {
        tags,
        querystring: listQuerySchema(automationResource),
        response: { 200: Type.Array(AutomationSchema), ...errorResponses },
      },
    },
    async (request, reply) => sendList(reply, await automations.listAutomations(request.actor, request.query)),
  )
  app.post(
    base,
    { schema: { tags, body: CreateAutomationBodySchema, response: { 201: AutomationSchema, ...errorResponses } } },
    async (request, reply) => reply.code(201).send(await automations.createAutomation(request.actor, request.body)),
  )
  app.post(
    `${base}/validate-action`,
    { schema: { tags, body: ActionInputSchema, response: { 200: ValidateActionResponseSchema, ...errorResponses } } },
    (request) => automations.validateAction(request.actor, request.body),
  )
  app.get(
    `${base}/:id`,
    {
      schema: {
        tags,
        params: IdParamsSchema,
        querystring: showQuerySchema(automationResource),
        response: { 200: AutomationSchema, ...errorResponses },
      },
    },
    (request) => automations.getAutomation(request.actor, request.params.id, request.query),
  )
  app.put(
    `${base}/:id`,
    {
      schema: {
        tags,
        params: IdParamsSchema,
        body: UpdateAutomationBodySchema,
        response: { 200: AutomationSchema, ...errorResponses },
      },
    },
    (request) => automations.updateAutomation(request.actor, request.params.id, request.body),
  )
  app.delete(
    `${base}/:id`,
    { schema: { tags, params: IdParamsSchema, response: { 204: NoContentSchema, ...errorResponses } } },
    async (request, reply) => {
      await automations.deleteAutomation(request.actor, request.params.id)
      return reply.code(204).send()
    },
  )
  app.post(
    `${base}/:id/test`,
    {
      config: { rateLimit: 'expensive' },
      schema: { tags, params: IdParamsSchema, response: { 202: TestResponseSchema, ...errorResponses } },
    },
    async (request, reply) => reply.code(202).send(await automations.testAutomation(request.actor, request.params.id)),
  )
  app.get(
    `${base}/:id/deliveries`,
    {
      schema: {
        tags,
        params: IdParamsSchema,
        querystring: listQuerySchema(deliveryResource),
        response: { 200: Type.Array(DeliverySchema), ...errorResponses },
      },
    },
    async (request, reply) =>
      sendList(reply, await automations.listDeliveries(request.actor, request.params.id, request.query)),
  )
  app.post(
    `${base}/:id/deliveries/:delivery/redeliver`,
    {
      config: { rateLimit: 'expensive' },
      schema: { tags, params: DeliveryParamsSchema, response: { 202: DeliverySchema, ...errorResponses } },
    },
    async (request, reply) => {
      const { id, delivery } = request.params
      return reply.code(202).send(await automations.redeliver(request.actor, id, delivery))
    },
  )
}

import { Type } from 'typebox'
import type { AppModule } from '../../platform/app-module.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { EXPLAIN_REASONS, explainAccess, type ExplainReason } from './access-explain.js'

const ExplainQuerySchema = Type.Object(
  {
    user_id: Type.Integer({ minimum: 1 }),
    target_entity: Type.String({ minLength: 1, maxLength: 64 }),
    target_entity_id: Type.String({ minLength: 1, maxLength: 64 }),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'view' })),
  },
  { additionalProperties: false },
)

const TargetRefSchema = Type.Object({ target_entity: Type.String(), target_entity_id: Type.String() })

const ExplanationSchema = Type.Object({
  allowed: Type.Boolean({ description: "computed by the rule the target's lists use" }),
  // a union built from a list: typed as the reasons themselves (TypeBox types only a tuple's union)
  reason: Type.Unsafe<ExplainReason>(Type.Union(EXPLAIN_REASONS.map((r) => Type.Literal(r)))),
  folder_id: Type.Union([Type.Integer(), Type.Null()], {
    description: 'the folder carrying the deciding grant (inherited_grant) or blocking',
  }),
  decided_by: Type.Union([TargetRefSchema, Type.Null()], {
    description: 'the target, record or folder whose grants decide (or block)',
  }),
  grants: Type.Array(
    Type.Object({
      id: Type.Integer(),
      target_entity: Type.String(),
      target_entity_id: Type.String(),
      key: Type.String(),
      permission_entity: Type.String(),
      permission_entity_id: Type.Integer(),
      matches: Type.Boolean(),
      why: Type.String(),
    }),
    {
      description:
        "the view grants of the target, the records it lives in and its folder path (other keys: the target's own)",
    },
  ),
  path: Type.Array(Type.Integer(), {
    description: 'folder chain the target inherits from, root first (a folder target is the last element)',
  }),
  records: Type.Array(TargetRefSchema, {
    description: "the target, then the records it lives in (e.g. a file's directory)",
  }),
})

export const accessModule: AppModule = {
  name: 'access',
  routes: async (app, { db }) => {
    app.get(
      '/api/administration/access/explain',
      {
        schema: {
          tags: ['access'],
          description:
            'Why a user can or cannot use a key on a target (computed by the access rule lists use). Permission `audit.view`.',
          querystring: ExplainQuerySchema,
          response: { 200: ExplanationSchema, ...errorResponses },
        },
      },
      async (request) => {
        requirePermission(request.actor, 'audit.view')
        const q = request.query
        return explainAccess(db, request.actor.tenantId, {
          userId: q.user_id,
          targetEntity: q.target_entity,
          targetEntityId: q.target_entity_id,
          key: q.key ?? 'view',
        })
      },
    )
  },
}

import { type Static, Type } from 'typebox'
import { EXPECTED } from '../../platform/http/schemas.js'

export const SyncQuerySchema = Type.Object(
  {
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description: 'The `cursor` of the previous answer; omit for a full snapshot',
      }),
    ),
    device: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,64}$',
        [EXPECTED]: '1 to 64 letters, digits, "-" or "_"',
        description: 'A stable id the client chose for this installation; a cursor is bound to it (default `default`)',
      }),
    ),
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 30,
        description: 'Seconds to hold an answer without changes until something changes (long poll)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SyncQuery = Static<typeof SyncQuerySchema>

const EntityId = Type.Union([Type.Integer(), Type.String()])

export const SyncUpsertSchema = Type.Object({
  op: Type.Literal('upsert'),
  entity: Type.String({ description: 'e.g. `folder`, `infoboardPost`, `manualEntry`, `filemanagerFile`' }),
  id: EntityId,
  version: Type.Integer({ description: 'The record’s change version (0: unchanged since the feed began)' }),
  data: Type.Object({}, { additionalProperties: true, description: 'The record as its own GET returns it' }),
})

export const SyncRemoveSchema = Type.Object({
  op: Type.Literal('remove'),
  entity: Type.String(),
  id: EntityId,
  reason: Type.Union([Type.Literal('deleted'), Type.Literal('access_lost')]),
})

export const SyncChangeSchema = Type.Union([SyncUpsertSchema, SyncRemoveSchema])
export type SyncChange = Static<typeof SyncChangeSchema>

export const SyncResponseSchema = Type.Object(
  {
    changes: Type.Array(SyncChangeSchema),
    cursor: Type.String({ description: 'Opaque; send it as `cursor` next time' }),
    has_more: Type.Boolean({ description: 'More changes are ready: sync again at once with the new cursor' }),
  },
  { $id: 'SyncResponse' },
)
export type SyncResponse = Static<typeof SyncResponseSchema>

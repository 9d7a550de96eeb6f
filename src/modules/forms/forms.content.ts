import { Type } from 'typebox'
import { defineContent, contentBodies } from '../content/index.js'
import { IdSchema, Nullable } from '../../platform/http/schemas.js'
import { formMessagesViewRule } from './forms.queries.js'

/** Forms, optionally in a form folder whose visibility they inherit. */
export const forms = defineContent({
  alias: 'form',
  table: 'forms',
  module: 'forms',
  label: 'Form',
  titleColumn: 'name',
  fields: { name: { type: 'string' }, folder_id: { type: 'id' } },
  folder: { column: 'folder_id', type: 'form' },
  appPath: (row) => `/forms/${row.id}`,
})

/**
 * Messages sent through a form. Any viewer of the form may send one; reading them needs the
 * `viewFormMessages` rule on the form and on its folder (unrestricted unless such grants exist).
 */
export const formMessages = defineContent({
  alias: 'formMessage',
  table: 'form_messages',
  module: 'forms',
  label: 'Form message',
  fields: { form_id: { type: 'id' }, data: { type: 'json' } },
  parent: { column: 'form_id', resource: forms },
  createBy: { viewersOfParent: true },
  viewRule: formMessagesViewRule,
  appPath: (row) => `/forms/${row.form_id}/messages/${row.id}`,
})

export const formBodies = contentBodies(
  { name: Type.String({ minLength: 1, maxLength: 255 }), folder_id: Nullable(IdSchema) },
  ['name'],
)
export const formMessageBodies = contentBodies(
  { data: Type.Record(Type.String({ maxLength: 255 }), Type.Unknown(), { maxProperties: 200 }) },
  ['data'],
)

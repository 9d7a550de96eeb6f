import { Type } from 'typebox'
import { defineContent, contentBodies } from '../content/index.js'
import { IdSchema, Nullable, TimestampInputSchema } from '../../platform/http/schemas.js'

/** Task executions, optionally in a taskTemplate folder whose visibility they inherit. */
export const taskExecutions = defineContent({
  alias: 'taskExecution',
  table: 'task_executions',
  module: 'tasks',
  label: 'Task execution',
  titleColumn: 'title',
  fields: {
    title: { type: 'string' },
    folder_id: { type: 'id' },
    due_at: { type: 'timestamp' },
    done_at: { type: 'timestamp' },
  },
  folder: { column: 'folder_id', type: 'taskTemplate' },
  appPath: (row) => `/tasks/executions/${row.id}`,
})

export const taskExecutionBodies = contentBodies(
  {
    title: Type.String({ minLength: 1, maxLength: 255 }),
    folder_id: Nullable(IdSchema),
    due_at: Nullable(TimestampInputSchema),
    done_at: Nullable(TimestampInputSchema),
  },
  ['title'],
)

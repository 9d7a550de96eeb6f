import { Type } from 'typebox'
import { defineContent, contentBodies } from '../content/index.js'
import { TimestampInputSchema } from '../../platform/http/schemas.js'

/** Stored (`YYYY-MM-DD HH:MM:SS`, UTC) or submitted (ISO 8601) timestamp → epoch ms. */
const epoch = (value: unknown) => {
  const text = String(value).replace(' ', 'T')
  return Date.parse(/[zZ]|[+-]\d{2}:?\d{2}$/.test(text) || text.length <= 10 ? text : `${text}Z`)
}

export const calendarEvents = defineContent({
  alias: 'calendarEvent',
  table: 'calendar_events',
  module: 'calendar',
  label: 'Calendar event',
  titleColumn: 'title',
  fields: { title: { type: 'string' }, starts_at: { type: 'timestamp' }, ends_at: { type: 'timestamp' } },
  appPath: (row) => `/calendar/events/${row.id}`,
  prepare(values, merged, errors) {
    if (merged.starts_at != null && merged.ends_at != null && epoch(merged.ends_at) < epoch(merged.starts_at))
      errors.add('ends_at', 'must not be before starts_at')
    return values
  },
})

export const calendarEventBodies = contentBodies(
  {
    title: Type.String({ minLength: 1, maxLength: 255 }),
    starts_at: TimestampInputSchema,
    ends_at: TimestampInputSchema,
  },
  ['title', 'starts_at', 'ends_at'],
)

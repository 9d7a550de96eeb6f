/**
 * Every notification type belongs to one delivery category: a notification setting of the tenant
 * (contract 40's defaults `general`, `infoboard`, `manuals`, `tasks`, `forms`, `calendar`). Channel
 * preferences are kept per category. A type is mapped by its prefix, so a new type of a module lands in
 * that module's category without a change here; anything else is `general`. Table in docs/notifications-delivery.md.
 */
export const CATEGORY_BY_PREFIX: Array<[prefix: string, category: string]> = [
  ['infoboard', 'infoboard'],
  ['manual', 'manuals'],
  ['task', 'tasks'],
  ['form', 'forms'],
  ['calendar', 'calendar'],
]

export const FALLBACK_CATEGORY = 'general'

export function categoryOf(notificationType: string): string {
  return CATEGORY_BY_PREFIX.find(([prefix]) => notificationType.startsWith(prefix))?.[1] ?? FALLBACK_CATEGORY
}

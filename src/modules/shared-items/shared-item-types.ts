import { FieldErrorCollector } from '../../platform/http/errors.js'

/** Redirect types (spec): what opening a shared item's stable URL does. */
export const REDIRECT_TYPES = ['none', 'redirect', 'redirectWithGrantToken'] as const
export type RedirectType = (typeof REDIRECT_TYPES)[number]

type ConfigValue = { type: 'boolean'; default: boolean }

interface SharedItemType {
  /** Target aliases a shared item of this type may point at (contract 30: exactly its own name). */
  targetableTypes: readonly string[]
  defaultRedirectType: RedirectType
  config: Record<string, ConfigValue>
}

const flag = (value: boolean): ConfigValue => ({ type: 'boolean', default: value })
const simple = (
  alias: string,
  defaultRedirectType: RedirectType,
  config: Record<string, ConfigValue> = {},
): SharedItemType => ({ targetableTypes: [alias], defaultRedirectType, config })

/** The type table of contract 30. */
export const SHARED_ITEM_TYPES: Readonly<Record<string, SharedItemType>> = Object.freeze({
  calendarEvent: simple('calendarEvent', 'redirect'),
  filemanagerDirectory: simple('filemanagerDirectory', 'redirectWithGrantToken', {
    include_subdirectories: flag(true),
  }),
  filemanagerFile: simple('filemanagerFile', 'redirectWithGrantToken'),
  form: simple('form', 'redirect'),
  formMessage: simple('formMessage', 'redirect'),
  infoboardComment: simple('infoboardComment', 'redirect'),
  infoboardPost: simple('infoboardPost', 'redirect', { show_comments: flag(true) }),
  manualChapter: simple('manualChapter', 'redirect', { include_entries: flag(true) }),
  manualEntry: simple('manualEntry', 'redirect', { show_history: flag(false) }),
  taskExecution: simple('taskExecution', 'redirect'),
})

export const SHARED_ITEM_TYPE_NAMES = Object.keys(SHARED_ITEM_TYPES)

export function sharedItemType(type: string): SharedItemType | undefined {
  return Object.hasOwn(SHARED_ITEM_TYPES, type) ? SHARED_ITEM_TYPES[type] : undefined
}

/**
 * A type's complete config: submitted keys checked (unknown key or wrong type → `config.<key>`),
 * omitted keys filled from the type's defaults. Problems go to `problems`.
 */
export function completeConfig(
  type: SharedItemType,
  submitted: Record<string, unknown> | undefined,
  problems: FieldErrorCollector,
): Record<string, unknown> {
  const config: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(submitted ?? {})) {
    const spec = Object.hasOwn(type.config, key) ? type.config[key] : undefined
    if (!spec)
      problems.add(
        `config.${key}`,
        Object.keys(type.config).length > 0
          ? `unknown key; allowed: ${Object.keys(type.config).join(', ')}`
          : 'unknown key; this type takes no configuration',
      )
    else if (typeof value !== spec.type) problems.add(`config.${key}`, `must be a ${spec.type}`)
  }
  for (const [key, spec] of Object.entries(type.config)) {
    config[key] = submitted !== undefined && Object.hasOwn(submitted, key) ? submitted[key] : spec.default
  }
  return config
}

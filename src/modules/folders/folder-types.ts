import type { FolderType } from '../../platform/db/schema.js'

export const FOLDER_TYPES = [
  'department',
  'form',
  'infoboardChannel',
  'report',
  'reportDefinition',
  'role',
  'survey',
  'taskAssignment',
  'taskTemplate',
] as const satisfies readonly FolderType[]

/** Folder type → the module whose `.view` / `.manage` permissions govern it (contract 00 §5). */
export const FOLDER_TYPE_MODULE: Record<FolderType, string> = {
  department: 'departments',
  form: 'forms',
  infoboardChannel: 'infoboard',
  report: 'reports',
  reportDefinition: 'reportDefinitions',
  role: 'roles',
  survey: 'surveys',
  taskAssignment: 'taskAssignments',
  taskTemplate: 'taskTemplates',
}

export const viewPermission = (type: FolderType) => `${FOLDER_TYPE_MODULE[type]}.view`
export const managePermission = (type: FolderType) => `${FOLDER_TYPE_MODULE[type]}.manage`

const BASE_KEYS = ['view', 'write', 'administrate'] as const

/** Grant keys a folder of this type accepts (contract 20). */
export function folderGrantKeys(type: FolderType): readonly string[] {
  if (type === 'infoboardChannel') return [...BASE_KEYS, 'administrationRights', 'comment']
  if (type === 'form') return [...BASE_KEYS, 'viewFormMessages']
  return BASE_KEYS
}

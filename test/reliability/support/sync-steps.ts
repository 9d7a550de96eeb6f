/**
 * The steps of the sync convergence model (sync-convergence.reliability.ts): an administrator's writes
 * and access changes, and syncs of USERS × DEVICES clients. Indexes pick among the records the
 * sequence made so far (modulo their count), so a shrunk sequence stays meaningful.
 */
import fc from 'fast-check'

/** The reader role's permissions: the view of every synced entity. */
export const READER = [
  'infoboard.view',
  'manuals.view',
  'filemanager.view',
  'calendar.view',
  'forms.view',
  'tasks.view',
  'taskTemplates.view',
]
/** The folder types the model writes in: channels hold posts, form folders forms, task folders task executions. */
export const FOLDER_TYPES = ['infoboardChannel', 'form', 'taskTemplate'] as const
export type FolderType = (typeof FOLDER_TYPES)[number]
export const USERS = 3
export const DEVICES = 2

const small = fc.nat({ max: 7 })
const userIndex = fc.nat({ max: USERS - 1 })
const grantee = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), index: userIndex }),
  fc.constant({ kind: 'role' as const, index: 0 }),
  fc.constant({ kind: 'department' as const, index: 0 }),
)
const folderType = fc.constantFrom(...FOLDER_TYPES)
export const step = fc.oneof(
  { weight: 3, arbitrary: fc.record({ do: fc.constant('createPost' as const), channel: small }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('editPost' as const), post: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deletePost' as const), post: small }) },
  {
    weight: 2,
    arbitrary: fc.record({ do: fc.constant('createFolder' as const), type: folderType, parent: fc.option(small) }),
  },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('renameFolder' as const), type: folderType, folder: small }) },
  {
    weight: 1,
    arbitrary: fc.record({
      do: fc.constant('moveFolder' as const),
      type: folderType,
      folder: small,
      parent: fc.option(small),
    }),
  },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deleteFolder' as const), type: folderType, folder: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('movePost' as const), post: small, channel: small }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('createComment' as const), post: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createChapter' as const) }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('notify' as const), user: userIndex }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('markRead' as const), user: userIndex }) },
  {
    weight: 2,
    arbitrary: fc.record({
      do: fc.constant('read' as const),
      user: userIndex,
      on: fc.constantFrom('post' as const, 'entry' as const),
      item: small,
      confirm: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createEntry' as const), chapter: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deleteEntry' as const), entry: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createDirectory' as const), parent: fc.option(small) }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createFile' as const), directory: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deleteFile' as const), file: small }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('createEvent' as const) }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('editEvent' as const), event: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deleteEvent' as const), event: small }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('createForm' as const), folder: fc.option(small) }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('createTask' as const), folder: fc.option(small) }) },
  {
    weight: 1,
    arbitrary: fc.record({ do: fc.constant('moveTask' as const), task: small, folder: fc.option(small) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      do: fc.constant('grant' as const),
      on: fc.constantFrom(
        'folder',
        'infoboardPost',
        'manualChapter',
        'filemanagerDirectory',
        'calendarEvent',
        'form',
        'taskExecution',
      ),
      target: small,
      to: grantee,
    }),
  },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('revoke' as const), grant: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('rolePermissions' as const), full: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      do: fc.constant('departmentMembers' as const),
      members: fc.subarray([...Array(USERS).keys()]),
    }),
  },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('userRole' as const), user: userIndex, reader: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ do: fc.constant('userActive' as const), user: userIndex, active: fc.boolean() }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      do: fc.constant('sync' as const),
      user: userIndex,
      device: fc.nat({ max: DEVICES - 1 }),
      from: fc.oneof(fc.constant('latest' as const), fc.constant('none' as const), fc.nat({ max: 5 })),
    }),
  },
)
export type Step = typeof step extends fc.Arbitrary<infer S> ? S : never

// The content engine (issue 40, finding 4): what the content modules (calendar, filemanager, forms,
// infoboard, manuals, tasks) declare their records with, and the AppModule fields it makes of them
// (routes, share targets, sync sources, publish and remind jobs, contentReadings).
export {
  type ChangeKind,
  type ContentChange,
  type ContentDeclaration,
  type ContentFolder,
  type ContentResource,
  type ContentRow,
  contentRow,
  type Principal,
} from './content-declaration.js'
export { defineContent } from './content-resource.js'
export {
  contentBodies,
  contentRecordSchema,
  contentRoutes,
  type GrantTokenActor,
  resolveViewer,
  type Viewer,
} from './content-routes.js'
export { contentShareTarget } from './content-share-target.js'
export { contentSyncSource } from './content-sync.js'
export { defineReading, readingBodyFields, type ReadingDeclaration } from './content-reading.js'
export { readingContentParts } from './content-reading.resource.js'
export {
  PUBLISH_JOB,
  type PublishPayload,
  publishJobHandlers,
  readingJobKey,
  REMIND_JOB,
  type RemindPayload,
  runPublishJob,
  runRemindJob,
} from './content-reading.jobs.js'
export {
  CONTENT_REMINDER_RECIPIENTS,
  readReachDetail,
  reminderRecipientsSql,
  writeReachDetail,
} from './content-reading.queries.js'
export { readingRoutes } from './content-reading-routes.js'

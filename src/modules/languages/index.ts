import { Type } from 'typebox'
import type { App, AppModule } from '../../platform/app-module.js'
import type { Db } from '../../platform/db/schema.js'
import { errorResponses } from '../../platform/http/schemas.js'

export const LanguageSchema = Type.Object({ id: Type.String(), name: Type.String() }, { $id: 'Language' })

/** The languages every tenant may use (seeded globally). */
export function listLanguages(db: Db) {
  return db.selectFrom('languages').select(['id', 'name']).orderBy('id').execute()
}

export async function languageExists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom('languages').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

async function languagesRoutes(app: App, db: Db): Promise<void> {
  app.get(
    '/api/languages',
    { schema: { tags: ['languages'], response: { 200: Type.Array(LanguageSchema), ...errorResponses } } },
    () => listLanguages(db),
  )
}

export const languagesModule: AppModule = {
  name: 'languages',
  routes: (app, { db }) => languagesRoutes(app, db),
}

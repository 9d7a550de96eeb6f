import { Type } from 'typebox'
import type { App, AppModule } from '../../platform/app-module.js'
import type { Db } from '../../platform/db/schema.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { listLanguages } from './languages.queries.js'

export const LanguageSchema = Type.Object({ id: Type.String(), name: Type.String() }, { $id: 'Language' })

export { listLanguages, languageExists, languageIds } from './languages.queries.js'

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

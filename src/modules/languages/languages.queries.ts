import type { Db } from '../../platform/db/schema.js'

/** The languages every tenant may use (seeded globally). */
export function listLanguages(db: Db) {
  return db.selectFrom('languages').select(['id', 'name']).orderBy('id').execute()
}

export async function languageExists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom('languages').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

/** The ids of every language (a global reference table: no tenant condition). */
export async function languageIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('languages').select('id').execute()
  return rows.map((r) => r.id)
}

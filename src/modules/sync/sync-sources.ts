import { composedTable } from '../../platform/composition.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'

/** The composed modules' `syncSources`, in module order, by entity name. */
export const syncSources = composedTable((modules): ReadonlyMap<string, SyncSource> => {
  const byEntity = new Map<string, SyncSource>()
  for (const source of modules.flatMap((module) => module.syncSources ?? [])) {
    if (byEntity.has(source.entity)) throw new Error(`two sync sources for entity "${source.entity}"`)
    byEntity.set(source.entity, source)
  }
  return byEntity
})

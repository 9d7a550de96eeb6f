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

/**
 * The grant targets whose `view` grants can change what a synced entity shows: the entities and the
 * containers they inherit visibility from. A grant on anything else (a shared item, a form) changes
 * no offline client's view, so it records no access change.
 */
export const syncedGrantTargets = composedTable(
  (modules): ReadonlySet<string> =>
    new Set(
      modules
        .flatMap((module) => module.syncSources ?? [])
        .flatMap((source) => [source.entity, ...(source.containers ?? [])]),
    ),
)

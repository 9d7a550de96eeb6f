import type { AppModule } from './app-module.js'

/*
 * What the app is made of: the modules the composition root (`buildApp`, the worker, the CLI) gave to
 * `composeApp`, and nothing an import could add. This is the one module-level variable the
 * architecture test allows to be written after import; what modules contribute (event subscribers,
 * grant and share targets, folder references…) is read from it through `composedTable`.
 */
let composed: readonly AppModule[] = Object.freeze([])

/** Makes `modules` (`appModules`, in their order) what the app is composed of. */
export function composeApp(modules: readonly AppModule[]): void {
  if (modules !== composed) composed = Object.freeze([...modules])
}

/**
 * A table derived from the composed modules (e.g. the share targets by alias), collected once per
 * composition: `collect` runs on the first read after `composeApp`, not on every lookup.
 */
export function composedTable<T>(collect: (modules: readonly AppModule[]) => T): () => T {
  const tables = new WeakMap<readonly AppModule[], { table: T }>()
  return () => {
    let entry = tables.get(composed)
    if (!entry) tables.set(composed, (entry = { table: collect(composed) }))
    return entry.table
  }
}

/**
 * A minimal observable: the app's state outside components (session, language, router, network)
 * is one of these; components subscribe through `useStore`. In its own file so that modules below
 * the API client (offline.ts) can hold state without importing core.ts.
 */
import { useEffect, useState } from 'preact/hooks'

export interface Store<T> {
  get(): T
  set(value: T): void
  subscribe(listener: () => void): () => void
}

export function store<T>(initial: T): Store<T> {
  let value = initial
  const listeners = new Set<() => void>()
  return {
    get: () => value,
    set(next) {
      if (Object.is(next, value)) return
      value = next
      for (const listener of [...listeners]) listener()
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
}

export function useStore<T>(s: Store<T>): T {
  const [, force] = useState(0)
  const value = s.get()
  useEffect(() => {
    const unsubscribe = s.subscribe(() => force((n) => n + 1))
    // a change between this render and the subscription (a redirect in a microtask) is not lost
    if (!Object.is(s.get(), value)) force((n) => n + 1)
    return unsubscribe
  }, [s])
  return value
}

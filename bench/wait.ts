/** Small timing helpers shared by the fan-out and webhook measurements. */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export interface PollOutcome<T> {
  /** The last value `check` returned. */
  value: T
  done: boolean
  /** `performance.now()` when `done` was observed (or when the deadline passed). */
  at: number
}

/**
 * Calls `check` every `intervalMs` (one call at a time: the next starts `intervalMs` after the
 * previous one answered) until `isDone(value)` or `timeoutMs` passed.
 */
export async function pollUntil<T>(
  check: () => Promise<T>,
  isDone: (value: T) => boolean,
  { intervalMs, timeoutMs }: { intervalMs: number; timeoutMs: number },
): Promise<PollOutcome<T>> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await check()
    const at = performance.now()
    if (isDone(value)) return { value, done: true, at }
    if (at >= deadline) return { value, done: false, at }
    await sleep(intervalMs)
  }
}

export const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error))

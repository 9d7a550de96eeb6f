/**
 * Waits until the current fixed rate-limit window (aligned to the epoch, like the limiter's) has at least
 * `seconds` left, so requests counted against one budget do not straddle two windows (a burst that
 * crosses a window's end is admitted twice the limit, rightly).
 */
export async function freshWindow(seconds: number, windowSeconds = 60): Promise<void> {
  const into = (Date.now() / 1000) % windowSeconds
  if (windowSeconds - into < seconds) await new Promise((r) => setTimeout(r, (windowSeconds - into + 0.2) * 1000))
}

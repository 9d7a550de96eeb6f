/** Small statistics shared by the bench's measurements. */

/** The run with the most requests per second (a side's figure: the machine's noise only ever slows a run). */
export const best = <T extends { rps: number }>(runs: T[]): T => [...runs].sort((x, y) => y.rps - x.rps)[0]!

/** The median (the mean of the two middle values for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

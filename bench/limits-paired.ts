import type { Db } from '../src/platform/db/schema.js'
import type { Scenario } from './scenarios.js'
import type { SeededTenant } from './seed.js'
import { load } from './load.js'
import { median } from './stats.js'

/**
 * `--limits=paired` (issue 42, docs/limits.md): the limiter's cost in one scenario, with both sides loaded
 * at the same time so that the machine's changes of speed hit both alike. Two API processes of the same
 * build, each serving one of two tenants seeded alike (`big` on the first, `big2` on the second); in each
 * round one tenant has its limits on (raised far above the load: the whole limiter runs) and the other is
 * exempt, both loaded at once with the scenario's connections; which tenant is limited swaps every round,
 * so that neither the tenant nor the process decides. A round's figure is limited req/s ÷ exempt req/s; a pair
 * of rounds' is their geometric mean (`PairedLimits.pairs`); `rounds` must be even.
 */
export interface PairedSide {
  tenant: SeededTenant
  apiUrl: string
}

export type SwitchLimits = (apiUrl: string, tenant: SeededTenant, mode: 'raised' | 'exempt') => Promise<void>

export interface PairedLimits {
  /** Each round's limited ÷ exempt req/s (the limited side alternates: first tenant, second, first, …). */
  quotients: number[]
  /**
   * The limits' quotient of each pair of rounds: the geometric mean of its two rounds, in which the same
   * limited ÷ exempt quotient met the two processes' (or tenants') own speeds once each way, so that
   * whatever makes one side faster than the other cancels.
   */
  pairs: number[]
  /** The median of the pairs. */
  quotient: number
  /** Requests answered with an error or an unexpected status, both sides, every round. */
  errors: number
}

export async function measurePairedLimits(
  scenario: Scenario,
  sides: readonly [PairedSide, PairedSide],
  db: Db,
  switchLimits: SwitchLimits,
  options: { rounds: number; seconds: number; warmup: number; expected3xx: boolean },
): Promise<PairedLimits> {
  if (options.rounds % 2 !== 0) throw new Error('paired rounds come in pairs: give an even number')
  const requests = await Promise.all(sides.map(async (side) => scenario.request(side.tenant, db, side.apiUrl)))
  const connections = scenario.connections
  const loadBoth = (seconds: number) =>
    Promise.all(
      sides.map((side, i) => load(side.apiUrl + requests[i]!.path, { ...requests[i]!, connections, seconds })),
    )
  const quotients: number[] = []
  let errors = 0
  for (let round = -1; round < options.rounds; round++) {
    // round -1: both sides warm up with the limits as the first round has them
    const limited = Math.max(round, 0) % 2
    for (const [i, side] of sides.entries())
      await switchLimits(side.apiUrl, side.tenant, i === limited ? 'raised' : 'exempt')
    const results = await loadBoth(round < 0 ? options.warmup : options.seconds)
    if (round < 0) continue
    errors += results.reduce((sum, r) => sum + r.errors + (options.expected3xx ? 0 : r.non2xx), 0)
    quotients.push(results[limited]!.rps / results[1 - limited]!.rps)
  }
  // what runs next finds both tenants exempt, as before
  for (const side of sides) await switchLimits(side.apiUrl, side.tenant, 'exempt')
  const pairs = quotients.flatMap((q, i) => (i % 2 === 1 ? [Math.sqrt(q * quotients[i - 1]!)] : []))
  return { quotients, pairs, quotient: median(pairs), errors }
}

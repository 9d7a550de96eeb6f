import type { Db } from '../db/schema.js'
import type { SecretBox, SecretHolder } from './secret-box.js'

/**
 * `workplace secrets rotate`: a new current key (key-file mode), then every holder re-sealed under it.
 * Running processes keep reading old values (old keys stay in the ring) and pick the new key up within
 * about a second; passes repeat until one changes nothing, so values an API process sealed under the
 * old key during the first pass are re-sealed too.
 */
export async function rotateSecrets(
  db: Db,
  box: SecretBox,
  holders: SecretHolder[],
  { newKey = true, settleMs = 1_500, tenantId }: { newKey?: boolean; settleMs?: number; tenantId?: number } = {},
) {
  const { generated } = newKey ? box.rotateKey() : { generated: false }
  const resealed: Record<string, number> = {}
  for (let pass = 0; pass < 5; pass++) {
    // after the first pass, wait until every running process has re-read the key file
    if (pass > 0 && generated) await new Promise((resolve) => setTimeout(resolve, settleMs))
    let changed = 0
    for (const holder of holders) {
      if (tenantId !== undefined && holder.global) continue
      const count = await holder.reseal(db, box, { tenantId })
      resealed[holder.name] = (resealed[holder.name] ?? 0) + count
      changed += count
    }
    if (changed === 0 && (pass > 0 || !generated)) break
  }
  return { generated, keyId: box.currentKeyId(), resealed }
}

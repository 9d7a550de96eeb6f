import { sql } from 'kysely'
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose'
import type { Db } from '../db/schema.js'
import { isSealed, type SecretBox, type SecretHolder } from '../secrets/secret-box.js'

/** ES256 (P-256): the JWS algorithm with the widest receiver support after RS256, with small keys. */
export const SIGNING_ALG = 'ES256'

/** A public P-256 signing key as the JWKS publishes it. */
export interface PublicJwk {
  kty: string
  crv: string
  x: string
  y: string
  kid: string
  alg: string
  use: string
}

/** A member of a stored public JWK (each row holds `exportJWK`'s EC members plus kid, alg and use). */
function jwkMember(jwk: Record<string, unknown>, name: keyof PublicJwk): string {
  const value = jwk[name]
  if (typeof value !== 'string') throw new Error(`signing key: the stored public JWK has no ${name}`)
  return value
}

export interface SigningKey {
  kid: string
  alg: string
  privateKey: CryptoKey
}

const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y'] as const
const imported = new Map<string, Promise<CryptoKey>>()

/**
 * How long a process keeps signing with the current key it last read, instead of one query per
 * signature on the stable-URL path. A rotation on another node is seen within this time; the tokens
 * signed meanwhile with the just-retired key still verify, because the JWKS keeps the previous key.
 */
const CURRENT_KEY_TTL_MS = 10_000
const currentKeys = new WeakMap<Db, { key: SigningKey; readAt: number }>()

function publicPart(jwk: JWK): JWK {
  const out: JWK = {}
  for (const member of PUBLIC_MEMBERS)
    if (jwk[member] !== undefined) (out as Record<string, unknown>)[member] = jwk[member]
  return out
}

/** The stored private JWK: `{"sealed": "enc:v1…"}` (older rows: the plain JWK, still readable). */
const sealJwk = (box: SecretBox, jwk: JWK) => JSON.stringify({ sealed: box.seal(JSON.stringify(jwk)) })

function openJwk(box: SecretBox, stored: Record<string, unknown>): JWK {
  return isSealed(stored.sealed) ? (JSON.parse(box.open(stored.sealed)) as JWK) : (stored as JWK)
}

async function newKeyRow(box: SecretBox) {
  const { privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true })
  const privateJwk = await exportJWK(privateKey)
  const publicJwk = publicPart(privateJwk)
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256')
  return {
    kid,
    alg: SIGNING_ALG,
    public_jwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' }),
    private_jwk: sealJwk(box, privateJwk),
  }
}

// One writer at a time: key creation and rotation are serialized across processes.
const lockKeys = (db: Db) => sql`select pg_advisory_xact_lock(hashtext('workplace:signing_keys'))`.execute(db)

/** Creates the first signing key when none exists (idempotent; safe from parallel processes). */
export async function ensureSigningKey(db: Db, box: SecretBox): Promise<void> {
  const current = await db.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst()
  if (current) return
  await db.transaction().execute(async (trx) => {
    await lockKeys(trx)
    const again = await trx.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst()
    if (!again)
      await trx
        .insertInto('signing_keys')
        .values(await newKeyRow(box))
        .execute()
  })
}

/**
 * Makes a new key current and retires the old one; the retired key stays in the JWKS (as "previous")
 * so tokens it signed verify until they expire. Returns the new `kid`.
 */
export async function rotateSigningKey(db: Db, box: SecretBox): Promise<{ kid: string; previousKid: string | null }> {
  const row = await newKeyRow(box)
  const rotated = await db.transaction().execute(async (trx) => {
    await lockKeys(trx)
    const retired = await trx
      .updateTable('signing_keys')
      .set({ retired_at: sql<Date>`now()` })
      .where('retired_at', 'is', null)
      .returning('kid')
      .executeTakeFirst()
    await trx.insertInto('signing_keys').values(row).execute()
    return { kid: row.kid, previousKid: retired?.kid ?? null }
  })
  currentKeys.delete(db)
  return rotated
}

/** The current private signing key (created on first use; re-read at most every CURRENT_KEY_TTL_MS). */
export async function currentSigningKey(db: Db, box: SecretBox): Promise<SigningKey> {
  const cached = currentKeys.get(db)
  if (cached && Date.now() - cached.readAt < CURRENT_KEY_TTL_MS) return cached.key
  const key = await readCurrentSigningKey(db, box)
  currentKeys.set(db, { key, readAt: Date.now() })
  return key
}

async function readCurrentSigningKey(db: Db, box: SecretBox): Promise<SigningKey> {
  const current = () =>
    db
      .selectFrom('signing_keys')
      .select(['kid', 'alg', 'private_jwk'])
      .where('retired_at', 'is', null)
      .executeTakeFirst()
  let row = await current()
  if (!row) {
    await ensureSigningKey(db, box)
    row = await current()
    if (!row) throw new Error('no current signing key')
  }
  let key = imported.get(row.kid)
  if (!key) {
    key = importJWK(openJwk(box, row.private_jwk), row.alg) as Promise<CryptoKey>
    imported.set(row.kid, key)
  }
  return { kid: row.kid, alg: row.alg, privateKey: await key }
}

/** The public JWK Set: the current key and the previous one (never private members); with `box`, creates the first key. */
export async function publicJwks(db: Db, box?: SecretBox): Promise<{ keys: PublicJwk[] }> {
  if (box) await ensureSigningKey(db, box)
  const rows = await db
    .selectFrom('signing_keys')
    .select('public_jwk')
    .orderBy(sql`retired_at is null`, 'desc')
    .orderBy('retired_at', 'desc')
    .limit(2)
    .execute()
  return {
    keys: rows.map(({ public_jwk: jwk }) => ({
      kty: jwkMember(jwk, 'kty'),
      crv: jwkMember(jwk, 'crv'),
      x: jwkMember(jwk, 'x'),
      y: jwkMember(jwk, 'y'),
      kid: jwkMember(jwk, 'kid'),
      alg: jwkMember(jwk, 'alg'),
      use: jwkMember(jwk, 'use'),
    })),
  }
}

/** Re-seals every private key that is plain or sealed under an older secrets key. */
export const signingKeySecrets: SecretHolder = {
  name: 'signing_keys',
  global: true,
  async reseal(db, box) {
    const rows = await db.selectFrom('signing_keys').select(['kid', 'private_jwk']).execute()
    let changed = 0
    for (const row of rows) {
      const stored = row.private_jwk
      if (isSealed(stored.sealed) && !box.needsResealing(stored.sealed)) continue
      const updated = await db
        .updateTable('signing_keys')
        .set({ private_jwk: sealJwk(box, openJwk(box, stored)) })
        .where('kid', '=', row.kid)
        .where(sql<boolean>`private_jwk = ${JSON.stringify(stored)}::jsonb`)
        .executeTakeFirst()
      changed += Number(updated.numUpdatedRows)
    }
    return changed
  },
}

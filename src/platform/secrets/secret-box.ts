import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { Db } from '../db/schema.js'
import { thrownFields } from '../thrown.js'

/** Where the keys come from: `SECRETS_KEY` (+ previous keys for reading), else a key file in DATA_DIR. */
export interface SecretsConfig {
  key: string | undefined
  previousKeys: string[]
  keyFile: string
}

const PREFIX = 'enc:v1.'
const KEY_BYTES = 32
const IV_BYTES = 12
/** How often a sealing process looks whether `workplace secrets rotate` replaced the key file. */
const KEY_FILE_RECHECK_MS = 1_000

export const isSealed = (value: unknown): value is string => typeof value === 'string' && value.startsWith(PREFIX)

function decodeKey(base64: string, source: string): Buffer {
  const key = Buffer.from(base64.trim(), 'base64')
  if (key.length !== KEY_BYTES) throw new Error(`${source} must be ${KEY_BYTES} bytes, base64-encoded`)
  return key
}

/** A short, non-secret fingerprint naming the key a value was sealed with (so old keys stay readable). */
const keyId = (key: Buffer) =>
  createHash('sha256').update('workplace-secrets-key-id').update(key).digest('hex').slice(0, 12)

interface KeyRing {
  current: Buffer
  byId: Map<string, Buffer>
}

function ring(keys: Buffer[]): KeyRing {
  return { current: keys[0]!, byId: new Map(keys.map((k) => [keyId(k), k])) }
}

function readKeyFile(file: string): Buffer[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => decodeKey(l, file))
}

/** Writes the key file atomically with mode 0600 (current key first, older keys after for reading). */
export function writeKeyFile(file: string, keys: Buffer[]): void {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const temporary = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temporary, keys.map((k) => k.toString('base64')).join('\n') + '\n', { mode: 0o600, flag: 'w' })
  fs.chmodSync(temporary, 0o600)
  fs.renameSync(temporary, file)
}

function ensureKeyFile(file: string): Buffer[] {
  try {
    return readKeyFile(file)
  } catch (error) {
    if (thrownFields(error).code !== 'ENOENT') throw error
  }
  fs.mkdirSync(path.dirname(file), { recursive: true })
  try {
    // 'wx': two processes starting together never overwrite each other's fresh key
    fs.writeFileSync(file, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if (thrownFields(error).code !== 'EEXIST') throw error
  }
  return readKeyFile(file)
}

/**
 * AES-256-GCM for secrets at rest. `seal` returns `enc:v1.<key id>.<iv>.<tag>.<ciphertext>`; `open`
 * reverses it and returns values written before encryption (plain text) unchanged.
 */
export class SecretBox {
  private keys: KeyRing
  private checkedAt = 0
  private fileStamp = 0

  constructor(private readonly config: SecretsConfig) {
    this.keys = this.load()
  }

  private load(): KeyRing {
    if (this.config.key) {
      return ring([
        decodeKey(this.config.key, 'SECRETS_KEY'),
        ...this.config.previousKeys.map((k) => decodeKey(k, 'SECRETS_PREVIOUS_KEYS')),
      ])
    }
    const keys = ensureKeyFile(this.config.keyFile)
    this.fileStamp = fs.statSync(this.config.keyFile).mtimeMs
    this.checkedAt = Date.now()
    return ring(keys)
  }

  /** Picks up a key file rotated by another process (the CLI) while this one runs. */
  private refresh(force = false): void {
    if (this.config.key) return
    if (!force && Date.now() - this.checkedAt < KEY_FILE_RECHECK_MS) return
    this.checkedAt = Date.now()
    const stamp = fs.statSync(this.config.keyFile).mtimeMs
    if (force || stamp !== this.fileStamp) this.keys = this.load()
  }

  /** The id of the key new values are sealed with. */
  currentKeyId(): string {
    this.refresh()
    return keyId(this.keys.current)
  }

  seal(plain: string): string {
    this.refresh()
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.keys.current, iv)
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    const parts = [
      keyId(this.keys.current),
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      ciphertext.toString('base64url'),
    ]
    return PREFIX + parts.join('.')
  }

  open(value: string): string {
    if (!isSealed(value)) return value
    const [id, iv, tag, ciphertext] = value.slice(PREFIX.length).split('.')
    let key = this.keys.byId.get(id!)
    if (!key) {
      this.refresh(true)
      key = this.keys.byId.get(id!)
    }
    if (!key) throw new Error(`secret sealed with an unknown key (${id}); is SECRETS_KEY / the key file the right one?`)
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv!, 'base64url'))
    decipher.setAuthTag(Buffer.from(tag!, 'base64url'))
    return Buffer.concat([decipher.update(Buffer.from(ciphertext!, 'base64url')), decipher.final()]).toString('utf8')
  }

  /** True when `value` is plain text or sealed with a key other than the current one. */
  needsResealing(value: string): boolean {
    return !isSealed(value) || !value.startsWith(`${PREFIX}${this.currentKeyId()}.`)
  }

  /**
   * Makes a new current key: in key-file mode a fresh random key is written first in the file (the old
   * ones stay for reading). With SECRETS_KEY the operator sets the new key in the environment (the old
   * one in SECRETS_PREVIOUS_KEYS); then rotation only re-seals under it.
   */
  rotateKey(): { generated: boolean } {
    if (this.config.key) return { generated: false }
    const keys = [randomBytes(KEY_BYTES), ...readKeyFile(this.config.keyFile)]
    writeKeyFile(this.config.keyFile, keys)
    this.refresh(true)
    return { generated: true }
  }
}

const boxes = new Map<string, SecretBox>()

/** One box per key source and process (the key file is read once, then re-checked about once a second). */
export function secretBoxFor(config: SecretsConfig): SecretBox {
  const cacheKey = config.key
    ? `env:${keyId(decodeKey(config.key, 'SECRETS_KEY'))}:${config.previousKeys.join(',')}`
    : `file:${config.keyFile}`
  let box = boxes.get(cacheKey)
  if (!box) {
    box = new SecretBox(config)
    boxes.set(cacheKey, box)
  }
  return box
}

/** A place that holds sealed values: re-seals every plain or old-key value under the current key. */
export interface SecretHolder {
  name: string
  /** Returns how many rows it rewrote; `tenantId` limits tenant-owned holders to one tenant (tests). */
  reseal: (db: Db, box: SecretBox, scope?: { tenantId?: number }) => Promise<number>
  /** Platform-wide holders (signing keys) skip a tenant-scoped pass. */
  global?: boolean
}

/**
 * The holder of one sealed column: each row whose value is plain or sealed under an old key is
 * re-sealed under the current key and written back with `write`.
 */
export function columnSecretHolder<Row>(
  name: string,
  column: {
    rows: (db: Db, tenantId: number | undefined) => Promise<Row[]>
    secretOf: (row: Row) => string
    write: (db: Db, row: Row, sealed: string) => Promise<unknown>
  },
): SecretHolder {
  return {
    name,
    async reseal(db, box, scope = {}) {
      let changed = 0
      for (const row of await column.rows(db, scope.tenantId)) {
        const secret = column.secretOf(row)
        if (isSealed(secret) && !box.needsResealing(secret)) continue
        await column.write(db, row, box.seal(box.open(secret)))
        changed++
      }
      return changed
    },
  }
}

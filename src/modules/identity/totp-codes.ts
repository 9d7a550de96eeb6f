import { createHash, timingSafeEqual } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'

const PERIOD = 30
/** Codes of the step before and after the current one are accepted too (clock drift). */
const WINDOW = 1

const normalizeRecoveryCode = (code: string) => code.replace(/[\s-]/g, '').toLowerCase()
export const hashRecoveryCode = (code: string) => createHash('sha256').update(normalizeRecoveryCode(code)).digest('hex')

/** Whether a recovery code's hash is one of the stored ones (compared in constant time). */
export function isKnownRecoveryCode(stored: string[], hashed: string): boolean {
  return stored.some((hash) => timingSafeEqual(Buffer.from(hash, 'hex'), Buffer.from(hashed, 'hex')))
}

/** `xxxxx-xxxxx` in lower-case base32 (50 bits). */
export function newRecoveryCode(): string {
  const text = new Secret({ size: 7 }).base32.toLowerCase().slice(0, 10)
  return `${text.slice(0, 5)}-${text.slice(5)}`
}

/** A new secret, base32. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32

/** RFC 6238, SHA-1, 6 digits, 30 s: what authenticator apps expect. */
export function totpOf(secretBase32: string, label = 'user', issuer = 'Workplace'): TOTP {
  return new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD,
    secret: Secret.fromBase32(secretBase32),
  })
}

/** The time step a valid code belongs to, or undefined. */
export function stepOf(secretBase32: string, code: string, now = Date.now()): number | undefined {
  const delta = totpOf(secretBase32).validate({ token: code, timestamp: now, window: WINDOW })
  return delta === null ? undefined : Math.floor(now / 1000 / PERIOD) + delta
}

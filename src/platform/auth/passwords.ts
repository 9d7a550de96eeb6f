import { hash, verify } from '@node-rs/argon2'

// argon2id with the library defaults (19 MiB, t=2, p=1): the OWASP baseline.
export function hashPassword(password: string): Promise<string> {
  return hash(password)
}

/**
 * Whether `password` matches the stored hash. A hash no password matches (an account without a
 * usable password) costs a check against a throwaway hash all the same: no account oracle by timing.
 */
/** Whether a stored hash can match some password (not `UNUSABLE_PASSWORD_HASH`, not empty). */
export const hasUsablePassword = (passwordHash: string) => passwordHash.startsWith('$argon2')

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  if (!hasUsablePassword(passwordHash)) {
    await burnPasswordCheck(password)
    return false
  }
  try {
    return await verify(passwordHash, password)
  } catch {
    return false
  }
}

/** A stored hash that no password matches (blacked-out accounts). */
export const UNUSABLE_PASSWORD_HASH = '!unusable'

let dummyHash: Promise<string> | undefined
/** Verifies against a throwaway hash so that unknown usernames take as long as wrong passwords. */
export async function burnPasswordCheck(password: string): Promise<void> {
  dummyHash ??= hash('timing-equalizer-password')
  try {
    await verify(await dummyHash, password)
  } catch {
    // a throwaway check: its answer does not matter
  }
}

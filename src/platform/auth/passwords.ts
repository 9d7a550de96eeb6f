import { hash, verify } from '@node-rs/argon2'

// argon2id with the library defaults (19 MiB, t=2, p=1): the OWASP baseline.
export function hashPassword(password: string): Promise<string> {
  return hash(password)
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
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
  await verifyPassword(await dummyHash, password)
}

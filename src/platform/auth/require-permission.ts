import type { Actor } from './actor.js'
import { can } from './permissions.js'
import { forbidden } from '../http/errors.js'

/** Throws 403 unless the actor's role grants `permission`. */
export function requirePermission(actor: Actor, permission: string): void {
  if (!can(actor, permission)) throw forbidden(`This requires the "${permission}" permission`)
}

/** The authenticated principal of a request. */
export interface Actor {
  userId: number
  tenantId: number
  roleId: number
  departmentIds: number[]
  permissions: ReadonlySet<string>
  /** The role holds `*`: bypasses restriction grants everywhere (contract 00 §6). */
  isAdmin: boolean
  langId: string | null
  tokenId: number
}

const actorShapes = new WeakMap<Actor, string>()

/**
 * What the SQL built for an actor can depend on besides the actor's ids (a `shapedStatement` key):
 * administrator or not, and the permissions held. Ids are parameters; actors come from the actor
 * cache, so the key is computed once per cached actor.
 */
export function actorShape(actor: Actor): string {
  let shape = actorShapes.get(actor)
  if (shape === undefined)
    actorShapes.set(actor, (shape = `${actor.isAdmin ? 'admin' : 'user'}:${[...actor.permissions].sort().join(',')}`))
  return shape
}

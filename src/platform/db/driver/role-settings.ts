import pg from 'pg'
import { thrownFields } from '../../thrown.js'

/**
 * The settings every statement of the app relies on. In session mode they are sent as startup options;
 * a transaction-mode pooler refuses or mixes up startup options, so there they must be the database's
 * own defaults (`applyDatabaseDefaults`, run by `migrate`) and are verified at start (`verifySessionSettings`).
 * JIT off: it pays off for long analytic queries, not for an API's; PostgreSQL compiles any plan whose
 * estimate passes jit_above_cost (access-rule lists do), adding 200-300 ms to a 9 ms query.
 */
export const REQUIRED_SETTINGS = { TimeZone: 'UTC', jit: 'off' } as const

/**
 * Makes the required settings the database's defaults for the app's role, so that every server
 * connection a pooler opens has them. Idempotent; needs ownership of the database or of the role
 * (else a warning: the operator sets them, `verifySessionSettings` tells).
 */
export async function applyDatabaseDefaults(pool: pg.Pool, warn: (message: string) => void = () => {}): Promise<void> {
  const settings = Object.entries(REQUIRED_SETTINGS)
  const { rows } = await pool.query<{ name: string; value: string | null }>(
    `select s.name, (select split_part(c, '=', 2) from pg_db_role_setting d, unnest(d.setconfig) c
                      where d.setdatabase = (select oid from pg_database where datname = current_database())
                        and d.setrole in (0, (select oid from pg_roles where rolname = current_user))
                        and lower(split_part(c, '=', 1)) = lower(s.name) order by d.setrole desc limit 1) as value
       from unnest($1::text[]) s(name)`,
    [settings.map(([name]) => name)],
  )
  const missing = settings.filter(
    ([name, value]) => rows.find((r) => r.name === name)?.value?.toLowerCase() !== value.toLowerCase(),
  )
  if (missing.length === 0) return
  try {
    const {
      rows: [who],
    } = await pool.query<{ role: string; database: string }>(
      'select current_user as role, current_database() as database',
    )
    const client = pg.Client.prototype
    for (const [name, value] of missing) {
      await pool.query(
        `alter role ${client.escapeIdentifier(who.role)} in database ${client.escapeIdentifier(who.database)} set ${name} to ${client.escapeLiteral(value)}`,
      )
    }
  } catch (error) {
    warn(
      `cannot make ${missing.map(([n, v]) => `${n}=${v}`).join(', ')} the defaults of this role in this database (${thrownFields(error).message}); set them yourself for transaction-mode pooling`,
    )
  }
}

/** In transaction mode: fails clearly when a server connection the pooler hands out lacks a required setting. */
export async function verifySessionSettings(pool: pg.Pool): Promise<void> {
  const names = Object.keys(REQUIRED_SETTINGS)
  const { rows } = await pool.query<{ name: string; setting: string }>(
    'select name, setting from pg_settings where name = any($1::text[])',
    [names],
  )
  const wrong = Object.entries(REQUIRED_SETTINGS).filter(
    ([name, value]) =>
      rows.find((r) => r.name.toLowerCase() === name.toLowerCase())?.setting.toLowerCase() !== value.toLowerCase(),
  )
  if (wrong.length > 0) {
    throw new Error(
      `DATABASE_POOL_MODE=transaction: the pooled connections lack ${wrong.map(([n, v]) => `${n}=${v}`).join(', ')}. ` +
        "Run `workplace migrate` on DATABASE_DIRECT_URL (it makes them the role's defaults in this database) or set them with ALTER ROLE … IN DATABASE … SET; " +
        'server connections the pooler opened before keep their old settings until it reconnects them (PgBouncer: RECONNECT).',
    )
  }
}

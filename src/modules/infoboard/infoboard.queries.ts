import { sql } from 'kysely'
import type { Principal } from '../content/index.js'

/** SQL: whether the principal may comment on the post at `post`: comments on, and the `comment` rule of the post and its channel. */
export const commentCreateRule = (p: Principal, post: string) =>
  sql<boolean>`(${sql.ref(`${post}.comments_enabled`)}
      and ${p.grant('comment', 'infoboardPost', sql.ref(`${post}.id`))}
      and ${p.grant('comment', 'folder', sql.ref(`${post}.channel_id`))})`

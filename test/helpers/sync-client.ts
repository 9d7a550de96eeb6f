import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { call } from './build-test-app.js'

/** One change of the feed (docs/sync.md). */
export type FeedChange =
  | { op: 'upsert'; entity: string; id: number | string; version: number; data: Record<string, unknown> }
  | { op: 'remove'; entity: string; id: number | string; reason: 'deleted' | 'access_lost'; data?: unknown }

export interface FeedAnswer {
  changes: FeedChange[]
  cursor: string
  has_more: boolean
}

/** What a client holds: `entity:id` → data. */
export type ClientState = Map<string, unknown>

export const key = (change: { entity: string; id: number | string }) => `${change.entity}:${String(change.id)}`

/** `GET /api/sync` (a snapshot without a cursor). */
export async function syncRequest(
  app: FastifyInstance,
  token: string,
  options: { cursor?: string; device?: string; wait?: number } = {},
) {
  const query = new URLSearchParams()
  if (options.cursor !== undefined) query.set('cursor', options.cursor)
  if (options.device !== undefined) query.set('device', options.device)
  if (options.wait !== undefined) query.set('wait', String(options.wait))
  const qs = query.toString()
  return call(app, token, { method: 'GET', url: `/api/sync${qs ? `?${qs}` : ''}` })
}

/** Applies one answer to a copy of the state, as a client does; a remove must name something held. */
export function applyFeed(state: ClientState, answer: FeedAnswer, strict = true): ClientState {
  const next = new Map(state)
  for (const change of answer.changes) {
    if (change.op === 'upsert') next.set(key(change), change.data)
    else {
      assert.equal(change.data, undefined, 'a remove carries no data')
      if (strict) assert.ok(next.has(key(change)), `a remove of ${key(change)}, which the client never held`)
      next.delete(key(change))
    }
  }
  return next
}

/** Syncs until `has_more` is false, from `cursor` (a snapshot without one); the state and the last cursor. */
export async function syncAll(
  app: FastifyInstance,
  token: string,
  state: ClientState,
  options: { cursor?: string; device?: string } = {},
): Promise<{ state: ClientState; cursor: string; answers: FeedAnswer[] }> {
  let cursor = options.cursor
  const answers: FeedAnswer[] = []
  for (;;) {
    const res = await syncRequest(app, token, { cursor, device: options.device })
    assert.equal(res.statusCode, 200, res.body)
    const answer = res.json<FeedAnswer>()
    answers.push(answer)
    state = applyFeed(cursor === undefined ? new Map() : state, answer)
    cursor = answer.cursor
    if (!answer.has_more) return { state, cursor, answers }
  }
}

/** A fresh full snapshot of what the user sees now. */
export async function snapshotState(app: FastifyInstance, token: string, device = 'oracle'): Promise<ClientState> {
  return (await syncAll(app, token, new Map(), { device })).state
}

/** The state as a sorted plain object, for deepEqual with a readable diff. */
export const plain = (state: ClientState) =>
  Object.fromEntries([...state.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))

import { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'

/** Sends a list: a streamed JSON array (from a cursor) or an in-memory page. */
export function sendList(reply: FastifyReply, list: Readable | unknown[]): FastifyReply {
  if (list instanceof Readable) return reply.type('application/json; charset=utf-8').send(list)
  return reply.send(list)
}

/** Sends a stream of another media type than the route's JSON (a CSV export of a list). */
export function sendStream(reply: FastifyReply, type: string, stream: Readable): FastifyReply {
  return reply.type(type).send(stream)
}

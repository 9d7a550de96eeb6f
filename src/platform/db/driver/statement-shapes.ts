import { isDeepStrictEqual } from 'node:util'
import type { Compilable, CompiledQuery } from 'kysely'

/** Where a stand-in's real value is found in the values of an execution. */
type Path = readonly string[]
type Parameter = { constant: unknown } | { path: Path }
interface Shape {
  compiled: CompiledQuery
  parameters: Parameter[]
}

/** How many shapes one statement keeps (a bound; past it the cache starts over). */
const MAX_SHAPES = 1_000
let verifying = false

/** Every execution of a shaped statement is also built afresh and compared (tests: `config.isTest`). */
export function verifyShapedStatements(on = true): void {
  verifying = on
}

/**
 * A statement built and compiled by Kysely once per shape instead of on every request (decision 0005,
 * fourth pass): building the query tree and compiling it was the largest part of a stable-URL click's
 * Node time that was not the framework's or the driver's (12 % of its CPU profile).
 *
 * Safe by construction (issue 31): the shape is derived from every input `build` can decide on, never
 * named by the caller.
 * - In `values`, numbers, strings, dates and buffers reach `build` as opaque stand-ins: they can only be
 *   passed on to Kysely as parameters; reading one (`Number(x)`, `${x}`, `x > 1`, `JSON.stringify`)
 *   throws, in production as in tests, so no decision can be taken on them. Each execution swaps its own
 *   values in. Everything else in `values` is part of the shape: booleans, null and undefined, sets (the
 *   actor's permissions), the keys of objects and the lengths of arrays (whose elements are stood in).
 * - The `fixed` arguments are part of the shape: plain data by content (a parsed query), functions and
 *   frozen objects (resource definitions: `defineResource` freezes them) by identity.
 * `build` must read nothing else that can change (module state, the clock). Under
 * `verifyShapedStatements` (tests) every execution is also built afresh and compared.
 */
export function shapedStatement<V extends Record<string, unknown>, F extends unknown[], R>(
  build: (values: V, ...fixed: F) => Compilable<R>,
): (values: V, ...fixed: F) => CompiledQuery<R> {
  const shapes = new Map<string, Shape>()
  return (values, ...fixed) => {
    const key = shapeOf(values, fixed)
    let shape = shapes.get(key)
    if (!shape) {
      if (shapes.size >= MAX_SHAPES) shapes.clear()
      shape = compileShape(build, values, fixed)
      shapes.set(key, shape)
    }
    const compiled: CompiledQuery<R> = {
      ...(shape.compiled as CompiledQuery<R>),
      parameters: shape.parameters.map((p) => ('path' in p ? valueAt(values, p.path) : p.constant)),
    }
    if (verifying) verifyShape(key, compiled, build(values, ...fixed).compile())
    return compiled
  }
}

/** Deep-freezes a definition that shaped statements take as a fixed argument, so that its identity can stand for its content. */
export function freezeDefinition<T extends object>(definition: T): T {
  if (Object.isFrozen(definition)) return definition
  Object.freeze(definition)
  for (const value of Object.values(definition))
    if (value !== null && typeof value === 'object' && isPlain(value)) freezeDefinition(value)
  return definition
}

/** A value that can only be passed on as a parameter: reading it is a decision the shape would not know. */
class StandIn {
  [Symbol.toPrimitive](): never {
    throw new Error(
      'shapedStatement: the builder read a value that varies between executions; pass it to Kysely as a parameter, or make the decision a boolean or fixed argument',
    )
  }
  toJSON(): never {
    return this[Symbol.toPrimitive]()
  }
}

function compileShape<V extends Record<string, unknown>, F extends unknown[]>(
  build: (values: V, ...fixed: F) => Compilable<unknown>,
  values: V,
  fixed: F,
): Shape {
  const paths = new Map<unknown, Path>()
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- standIn keeps the structure of a plain object: its stand-ins are a V to the builder
  const standIns = standIn(values, [], paths) as V
  const compiled = build(standIns, ...fixed).compile()
  return {
    compiled,
    parameters: compiled.parameters.map((p) => {
      const path = paths.get(p)
      return path ? { path } : { constant: p }
    }),
  }
}

function standIn(value: unknown, path: Path, paths: Map<unknown, Path>): unknown {
  if (Array.isArray(value)) {
    const stood: unknown[] = value.map((element, index) => standIn(element, [...path, String(index)], paths))
    paths.set(stood, path)
    return stood
  }
  if (isPlainObject(value))
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, standIn(field, [...path, key], paths)]))
  if (!isStoodIn(value)) return value
  const stood = new StandIn()
  paths.set(stood, path)
  return stood
}

const isStoodIn = (value: unknown) =>
  typeof value === 'number' || typeof value === 'string' || value instanceof Date || Buffer.isBuffer(value)

const isPlain = (value: object) => {
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null || Array.isArray(value)
}
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && isPlain(value)

/** The shape key: everything of the values but the stand-ins' contents, and the fixed arguments. */
function shapeOf(values: Record<string, unknown>, fixed: unknown[]): string {
  let key = valuesShape(values)
  for (const argument of fixed) key += '|' + fixedShape(argument)
  return key
}

function valuesShape(value: unknown): string {
  if (isStoodIn(value)) return '?'
  if (Array.isArray(value)) return '[' + value.map(valuesShape).join(',') + ']'
  if (isPlainObject(value)) {
    let shape = '{'
    for (const key in value) shape += JSON.stringify(key) + ':' + valuesShape(value[key]) + ','
    return shape + '}'
  }
  return fixedShape(value)
}

const identities = new WeakMap<object, number>()
let nextIdentity = 0
const identityOf = (value: object) => {
  let identity = identities.get(value)
  if (identity === undefined) identities.set(value, (identity = ++nextIdentity))
  return `#${identity}`
}

function fixedShape(value: unknown): string {
  if (value === undefined) return 'u'
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string')
    return JSON.stringify(value)
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'function' || (typeof value === 'object' && Object.isFrozen(value))) return identityOf(value)
  if (value instanceof Set) return 'S' + JSON.stringify([...value].map(fixedShape).sort())
  if (value instanceof Date) return `D${value.getTime()}`
  if (Array.isArray(value)) return '[' + value.map(fixedShape).join(',') + ']'
  if (isPlainObject(value)) {
    let shape = '{'
    for (const key in value) shape += JSON.stringify(key) + ':' + fixedShape(value[key]) + ','
    return shape + '}'
  }
  throw new Error(
    `shapedStatement: a ${Object.prototype.toString.call(value)} cannot be part of a shape; freeze it (freezeDefinition) or pass plain data`,
  )
}

function valueAt(values: Record<string, unknown>, path: Path): unknown {
  let value: unknown = values
  for (const key of path) value = (value as Record<string, unknown>)[key] // eslint-disable-line @typescript-eslint/no-unsafe-type-assertion -- a path recorded from this structure
  return value
}

function verifyShape(key: string, shaped: CompiledQuery, direct: CompiledQuery): void {
  if (shaped.sql === direct.sql && isDeepStrictEqual(shaped.parameters, direct.parameters)) return
  throw new Error(
    `shapedStatement: shape ${key} gave another statement than building it with these values; the builder read an input that is not part of the shape\n${shaped.sql}\n${direct.sql}`,
  )
}

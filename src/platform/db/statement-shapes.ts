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
 * `build` receives the values as stand-ins that behave like them (boxed numbers and strings, copied
 * arrays and buffers, plain objects such as the actor with their fields stood in) but are recognizable by identity
 * among the compiled parameters; every later execution of the same shape swaps its own values in.
 * Booleans, sets and the `fixed` arguments are passed as they are. So the shape key must name every
 * decision `build` takes on anything but the stand-ins' identity: which branch a boolean or a set
 * (the actor's permissions) chose, the fixed arguments, an array's length if it expands to a list.
 * Under `verifyShapedStatements` (the app turns it on when `config.isTest`) every execution is also
 * built afresh with the real values and compared, so a decision missing from the key fails the tests
 * that reach it.
 */
export function shapedStatement<V extends Record<string, unknown>, F extends unknown[], R>(
  build: (values: V, ...fixed: F) => Compilable<R>,
): (shapeKey: string, values: V, ...fixed: F) => CompiledQuery<R> {
  const shapes = new Map<string, Shape>()
  return (shapeKey, values, ...fixed) => {
    let shape = shapes.get(shapeKey)
    if (!shape) {
      if (shapes.size >= MAX_SHAPES) shapes.clear()
      shape = compileShape(build, values, fixed)
      shapes.set(shapeKey, shape)
    }
    const compiled = {
      ...shape.compiled,
      parameters: shape.parameters.map((p) => ('path' in p ? valueAt(values, p.path) : p.constant)),
    }
    if (verifying) verifyShape(shapeKey, compiled, build(values, ...fixed).compile())
    return compiled as CompiledQuery<R>
  }
}

function compileShape<V extends Record<string, unknown>, F extends unknown[]>(
  build: (values: V, ...fixed: F) => Compilable<unknown>,
  values: V,
  fixed: F,
): Shape {
  const paths = new Map<unknown, Path>()
  const standIns = standIn(values, [], paths) as V
  const compiled = build(standIns, ...fixed).compile()
  return {
    compiled,
    parameters: compiled.parameters.map((p) => (paths.has(p) ? { path: paths.get(p)! } : { constant: p })),
  }
}

function standIn(value: unknown, path: Path, paths: Map<unknown, Path>): unknown {
  let stood: unknown
  if (typeof value === 'number') stood = Object(value)
  else if (typeof value === 'string') stood = Object(value)
  else if (Array.isArray(value)) stood = [...value]
  else if (Buffer.isBuffer(value)) stood = Buffer.from(value)
  else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, standIn(field, [...path, key], paths)]))
  } else return value
  paths.set(stood, path)
  return stood
}

function valueAt(values: Record<string, unknown>, path: Path): unknown {
  let value: unknown = values
  for (const key of path) value = (value as Record<string, unknown>)[key]
  return value
}

function verifyShape(shapeKey: string, shaped: CompiledQuery, direct: CompiledQuery): void {
  if (shaped.sql === direct.sql && isDeepStrictEqual(shaped.parameters, direct.parameters)) return
  throw new Error(
    `shapedStatement: shape "${shapeKey}" gave another statement than building it with these values; a decision of the builder is missing from the shape key\n${shaped.sql}\n${direct.sql}`,
  )
}

import type { FieldErrors } from './errors.js'

/** An ajv error as reported with `verbose: true` (the failing schema and its parent are attached). */
export interface AjvIssue {
  instancePath?: string
  schemaPath?: string
  keyword?: string
  message?: string
  params?: Record<string, unknown>
  schema?: unknown
  parentSchema?: Record<string, unknown>
}

/** Annotation on a `pattern` schema: what the pattern expects, in words (shown instead of the regex). */
export const EXPECTED = 'x-expected'

type Branch = { const?: unknown; enum?: unknown[]; type?: unknown }
/** A branch of a union's schema (TypeBox writes every branch as an object). */
const branchesOf = (schema: unknown): Branch[] =>
  Array.isArray(schema) ? schema.filter((b): b is Branch => typeof b === 'object' && b !== null) : []

function toDottedPath(instancePath = ''): string {
  return instancePath
    .replace(/^\//, '')
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.')
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`)
const quoteAll = (values: unknown[]) => values.map((v) => JSON.stringify(v)).join(', ')

function choicesOf(branches: Branch[]): unknown[] | undefined {
  const values: unknown[] = []
  for (const branch of branches) {
    if (Object.hasOwn(branch, 'const')) values.push(branch.const)
    else if (Array.isArray(branch.enum)) values.push(...branch.enum)
    else if (branch.type === 'null') values.push(null)
    else return undefined
  }
  return values
}

/** One issue's message, in words a person can act on. */
function messageOf(issue: AjvIssue): string {
  const params = issue.params ?? {}
  switch (issue.keyword) {
    case 'required':
      return 'is required'
    case 'additionalProperties':
      return 'is not an allowed field'
    case 'enum':
      return `must be one of: ${quoteAll(Array.isArray(params.allowedValues) ? params.allowedValues : [])}`
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`
    case 'type':
      return `must be ${String(params.type).split(',').map(article).join(' or ')}`
    case 'pattern': {
      const expected = issue.parentSchema?.[EXPECTED]
      return typeof expected === 'string' ? `must be ${expected}` : 'has an invalid format'
    }
    case 'format':
      return `must be a valid ${String(params.format)}`
    case 'minLength':
      return `must be at least ${String(params.limit)} characters`
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters`
    case 'minimum':
      return `must be at least ${String(params.limit)}`
    case 'maximum':
      return `must be at most ${String(params.limit)}`
    case 'minItems':
      return `must have at least ${String(params.limit)} items`
    case 'maxItems':
      return `must have at most ${String(params.limit)} items`
    default:
      return issue.message ?? 'is invalid'
  }
}

/**
 * ajv issues → `{ "field.path": ["message"] }`: missing and unknown keys at their own path; an enum or a
 * union of literals lists its values; a nullable field gets one message ("must be an integer or null");
 * a pattern says what it expects in words (`x-expected`), never the regular expression.
 */
export function validationErrors(issues: AjvIssue[]): FieldErrors {
  // no prototype: a client-chosen field name such as `constructor` or `__proto__` is just a key
  const errors: FieldErrors = Object.create(null)
  const add = (field: string, message: string) => {
    const list = (errors[field || '_'] ??= [])
    if (!list.includes(message)) list.push(message)
  }
  // unions (anyOf/oneOf) report after their branches: index them so a branch error can defer to its union
  const unions = issues.filter((i) => (i.keyword === 'anyOf' || i.keyword === 'oneOf') && Array.isArray(i.schema))
  const unionOf = (issue: AjvIssue) =>
    unions
      .filter(
        (u) => u !== issue && u.instancePath === issue.instancePath && issue.schemaPath?.startsWith(`${u.schemaPath}/`),
      )
      .sort((a, b) => (b.schemaPath?.length ?? 0) - (a.schemaPath?.length ?? 0))[0]
  for (const issue of issues) {
    let field = toDottedPath(issue.instancePath)
    if (issue.keyword === 'required' || issue.keyword === 'additionalProperties') {
      const key = issue.params?.missingProperty ?? issue.params?.additionalProperty
      if (key !== undefined) field = [field, String(key)].filter(Boolean).join('.')
      add(field, messageOf(issue))
      continue
    }
    if (issue.keyword === 'anyOf' || issue.keyword === 'oneOf') {
      const branches = branchesOf(issue.schema)
      const choices = choicesOf(branches)
      if (choices) add(field, `must be one of: ${quoteAll(choices)}`)
      else if (!unionOf(issue) && !Object.hasOwn(errors, field || '_')) add(field, 'is invalid')
      continue
    }
    const union = unionOf(issue)
    if (union) {
      const branches = branchesOf(union.schema)
      if (choicesOf(branches)) continue // the union lists every allowed value
      const nullable = branches.some((b) => b.type === 'null')
      if (nullable && issue.keyword === 'type' && issue.params?.type === 'null') continue
      if (nullable && issue.keyword === 'type') {
        add(field, `${messageOf(issue)} or null`)
        continue
      }
    }
    add(field, messageOf(issue))
  }
  return errors
}

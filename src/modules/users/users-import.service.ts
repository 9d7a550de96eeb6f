import { randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import { CsvError, parse } from 'csv-parse/sync'
import { stringify } from 'csv-stringify/sync'
import { fileTypeFromBuffer } from 'file-type'
import { Type } from 'typebox'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { validationErrors } from '../../platform/http/error-handler.js'
import { FieldErrorCollector, invalidField } from '../../platform/http/errors.js'
import type { UploadedFile } from '../../platform/http/multipart.js'
import type { FileStorage } from '../../platform/storage/file-storage.js'
import { parseBooleanWord } from '../../platform/text/boolean-words.js'
import { compileValidator } from '../../platform/validation/validator.js'
import * as queries from './users.queries.js'
import {
  checkUserInput,
  DATE_KEYS,
  exceedsOwnPermissions,
  loadRuleContext,
  normalizeDate,
  ROLE_BEYOND_ACTOR,
  roleWithinActor,
} from './users.rules.js'
import {
  CSV_MAX_ROWS,
  IMPORTABLE_KEYS,
  TEMPLATE_KEYS,
  userInputFields,
  type ImportableKey,
  type ImportCsvBody,
  type UserInput,
} from './users.schemas.js'

export type UsersImportService = ReturnType<typeof createUsersImportService>

// A CSV row is checked against the very schemas of the JSON create/update body.
const rowInput = compileValidator(
  Type.Object(Object.fromEntries(IMPORTABLE_KEYS.map((k) => [k, Type.Optional(userInputFields[k])]))),
)

const BOOLEAN_KEYS = new Set<ImportableKey>(['active', 'group_account'])
/** Text keys whose blank cell becomes null with `whitespace_to_null` (otherwise ""). */
const NULLABLE_TEXT_KEYS = new Set<ImportableKey>(['street', 'zipcode', 'city', 'phone', 'staff_number'])
/** Keys whose blank cell is always null: "" is no valid email, language, gender or date. */
const NULL_WHEN_BLANK = new Set<ImportableKey>(['email', 'lang_id', 'gender', ...DATE_KEYS])

interface ParsedRow {
  line: number
  input: UserInput
}

const csvProblem = (message: string) => invalidField('user_data_csv', message)

/** UTF-8 text of an uploaded CSV without BOM; 422 for binary files, other encodings or empty files. */
async function readCsvText(bytes: Buffer): Promise<string> {
  if (bytes.includes(0) || (await fileTypeFromBuffer(bytes))) throw csvProblem('must be a CSV text file')
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    throw csvProblem('must be UTF-8 encoded')
  }
  if (text.trim() === '') throw csvProblem('is empty')
  return text.replace(/\r\n?/g, '\n')
}

/** `;` when the header line has more semicolons than commas (outside quotes), else `,`. */
function detectDelimiter(text: string): string {
  const header = text.slice(0, text.indexOf('\n') === -1 ? undefined : text.indexOf('\n')).replace(/"[^"]*"/g, '')
  return (header.match(/;/g)?.length ?? 0) > (header.match(/,/g)?.length ?? 0) ? ';' : ','
}

/** Header cell index → importable key, honouring remaps (`username=Login`); every problem is a 422. */
function mapHeader(header: string[], body: ImportCsvBody): Map<number, ImportableKey> {
  const problems = new FieldErrorCollector()
  const remapped = new Map<string, ImportableKey>()
  for (const key of IMPORTABLE_KEYS) {
    const source = (body as Record<string, unknown>)[key]
    if (typeof source !== 'string') continue
    if (!header.includes(source.trim())) problems.add(key, `names no column of the file ("${source}")`)
    remapped.set(source.trim(), key)
  }
  const columns = new Map<number, ImportableKey>()
  const seen = new Set<ImportableKey>()
  header.forEach((name, index) => {
    const key = remapped.get(name) ?? (isImportableKey(name) && !remapped.has(name) ? name : undefined)
    if (!key) problems.add('user_data_csv', `unknown column "${name}"`)
    else if (seen.has(key)) problems.add('user_data_csv', `column for "${key}" appears more than once`)
    else {
      seen.add(key)
      columns.set(index, key)
    }
  })
  if (!seen.has('username') && problems.isEmpty) problems.add('user_data_csv', 'needs a "username" column')
  problems.throwIfAny('The CSV header is invalid')
  return columns
}

/** One cell in the type of its key; a string message when it cannot be converted. */
function cellValue(key: ImportableKey, raw: string, whitespaceToNull: boolean): unknown {
  const value = raw.trim()
  if (value === '') {
    if (NULLABLE_TEXT_KEYS.has(key)) return whitespaceToNull ? null : ''
    if (NULL_WHEN_BLANK.has(key)) return null
    if (BOOLEAN_KEYS.has(key) || key === 'role_id' || key === 'password') return undefined
    return ''
  }
  if (BOOLEAN_KEYS.has(key)) {
    return parseBooleanWord(value) ?? new Error('must be a boolean (1/0/true/false/yes/no)')
  }
  if (key === 'role_id') return /^\d{1,15}$/.test(value) ? Number(value) : new Error('must be an integer')
  if ((DATE_KEYS as readonly string[]).includes(key))
    return normalizeDate(value) ?? new Error('must be a valid date (YYYY-MM-DD or DD.MM.YYYY)')
  return key === 'password' ? raw : value
}

/** A random password for a new user whose row left it empty (at least 16 characters). */
const generatePassword = (minLength: number) =>
  randomBytes(Math.max(18, Math.ceil(minLength * 0.75))).toString('base64url')

const isImportableKey = (name: string): name is ImportableKey => IMPORTABLE_KEYS.some((key) => key === name)

/** Parses the records of the CSV text; each with its line number (header = 1). */
function parseRecords(text: string): Array<{ cells: string[]; line: number }> {
  try {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- csv-parse's typings do not follow `info: true`
    const records = parse(text, {
      delimiter: detectDelimiter(text),
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
      skip_records_with_empty_values: true,
      max_record_size: 64 * 1024,
      to: CSV_MAX_ROWS + 2,
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>
    // info.lines is the line a record ends on; quoted newlines move its first line up
    return records.map(({ record, info }) => ({
      cells: record,
      line: info.lines - record.reduce((n, c) => n + (c.match(/\n/g)?.length ?? 0), 0),
    }))
  } catch (error) {
    if (error instanceof CsvError) throw csvProblem(`could not be parsed: ${error.message}`)
    throw error
  }
}

export function createUsersImportService({ db }: AppDeps, storage: FileStorage) {
  /** The import template: one header row, each default header replaceable by a query value. */
  function importTemplate(actor: Actor, remaps: Record<string, string | undefined>): string {
    requirePermission(actor, 'users.administrate')
    return stringify([TEMPLATE_KEYS.map((key) => remaps[key] ?? key)], { record_delimiter: '\r\n' })
  }

  /**
   * Dry-run of a user CSV import (contract 10): validates every row like a create or update and
   * reports all bad rows at once as `rows.<line>.<key>`; writes nothing.
   */
  async function parseUsersCsv(actor: Actor, body: ImportCsvBody, upload: UploadedFile | undefined) {
    requirePermission(actor, 'users.administrate')
    if (!upload) throw invalidField('user_data_csv', 'is required (a CSV file)')
    const text = await readCsvText(await fs.readFile(storage.path(upload.area, upload.name)))
    const [headerRecord, ...records] = parseRecords(text)
    if (records.length > CSV_MAX_ROWS) throw csvProblem(`has more than ${CSV_MAX_ROWS} data rows`)
    const columns = mapHeader(
      headerRecord.cells.map((h) => h.trim()),
      body,
    )

    const problems = new FieldErrorCollector()
    const rows: ParsedRow[] = []
    const firstLine = new Map<string, number>()
    for (const { cells, line } of records) {
      const prefix = `rows.${line}.`
      if (cells.length !== headerRecord.cells.length)
        problems.add(`rows.${line}`, `has ${cells.length} cells, the header has ${headerRecord.cells.length}`)
      const input: Record<string, unknown> = {}
      columns.forEach((key, index) => {
        const value = cellValue(key, cells[index] ?? '', body.whitespace_to_null === true)
        if (value instanceof Error) problems.add(prefix + key, value.message)
        else if (value !== undefined) input[key] = value
      })
      for (const [key, messages] of Object.entries(validationErrors(rowInput.Errors(input))))
        messages.forEach((m) => problems.add(prefix + key, m))
      const name = typeof input.username === 'string' ? input.username.toLowerCase() : ''
      if (name && firstLine.has(name))
        problems.add(`${prefix}username`, `appears more than once in the file (first on line ${firstLine.get(name)})`)
      else if (name) firstLine.set(name, line)
      rows.push({ line, input: input as UserInput })
    }

    const existing = new Map(
      (await queries.findUsersByUsernames(db, actor.tenantId, [...firstLine.keys()])).map((u) => [u.key, u]),
    )
    const rules = await loadRuleContext(
      db,
      actor.tenantId,
      rows.map((r) => r.input.role_id),
    )
    const newUsers: Array<Record<string, unknown>> = []
    const updateUsers: Array<Record<string, unknown>> = []
    for (const { line, input } of rows) {
      const prefix = `rows.${line}.`
      const match = input.username ? existing.get(input.username.toLowerCase()) : undefined
      if (match?.deleted_at) {
        problems.add(`${prefix}username`, 'belongs to a deleted user')
      } else if (match) {
        if (body.update_users !== true) continue
        checkUserInput(input, match, rules, problems, prefix)
        updateUsers.push(present({ id: match.id, ...input }))
      } else {
        checkUserInput(input, undefined, rules, problems, prefix)
        const group = input.group_account === true
        newUsers.push(
          present({
            username: input.username,
            password: input.password ?? generatePassword(rules.passwordMinLength),
            first_name: group ? '' : (input.first_name ?? ''),
            last_name: group ? '' : (input.last_name ?? ''),
            role_id: input.role_id,
            lang_id: input.lang_id ?? null,
            ...omit(input, ['username', 'password', 'first_name', 'last_name', 'role_id', 'lang_id']),
          }),
        )
      }
    }
    problems.throwIfAny('The CSV has invalid rows')
    // no one imports users into a role holding more than they hold (issue 33)
    const beyond = rows.filter(
      ({ input }) => input.role_id !== undefined && !roleWithinActor(actor, rules, input.role_id),
    )
    if (beyond.length > 0)
      throw exceedsOwnPermissions(
        Object.fromEntries(beyond.map(({ line }) => [`rows.${line}.role_id`, ROLE_BEYOND_ACTOR])),
      )

    const deleteUsers =
      body.delete_users === true
        ? await queries.selectUsersAbsentFrom(db, actor.tenantId, [...firstLine.keys()], actor.userId)
        : []
    return { new_users: newUsers, update_users: updateUsers, delete_users: deleteUsers }
  }

  return { importTemplate, parseUsersCsv }
}

function omit(input: Record<string, unknown>, keys: string[]) {
  return Object.fromEntries(Object.entries(input).filter(([k]) => !keys.includes(k)))
}

/** Dates in the response's timestamp form (contract 10). */
function present(row: Record<string, unknown>) {
  for (const key of DATE_KEYS) if (typeof row[key] === 'string') row[key] = `${row[key]} 00:00:00`
  return row
}

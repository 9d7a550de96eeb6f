import { Readable } from 'node:stream'
import { stringify } from 'csv-stringify/sync'

/** Whether the client asked for CSV (`Accept: text/csv`). */
export const wantsCsv = (accept: string | undefined) => /\btext\/csv\b/i.test(accept ?? '')

/**
 * A cell as a spreadsheet may open it: text that a spreadsheet would run as a formula (`=`, `+`, `-`,
 * `@`, tab, carriage return first) gets a leading `'` (security-tests.md, "Formula round trip").
 */
export const spreadsheetSafe = (value: unknown): unknown =>
  typeof value === 'string' && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value

/**
 * CSV of a list query, streamed from a cursor in batches of 500 rows (an export has no implicit
 * limit, and memory stays flat however many rows it has): a header line of `columns`, then one line
 * per presented row, each cell by `cell` (default: the value, or empty).
 */
export function csvStream(
  query: { stream(chunkSize: number): AsyncIterable<Record<string, unknown>> },
  present: (rows: Record<string, unknown>[]) => Promise<Record<string, unknown>[]>,
  columns: readonly string[],
  cell: (item: Record<string, unknown>, column: string) => unknown = (item, column) => item[column] ?? '',
): Readable {
  async function* generate() {
    yield stringify([[...columns]])
    let batch: Record<string, unknown>[] = []
    const flush = async () => {
      const items = await present(batch)
      batch = []
      return stringify(items.map((item) => columns.map((column) => spreadsheetSafe(cell(item, column)))))
    }
    for await (const row of query.stream(500)) {
      batch.push(row)
      if (batch.length >= 500) yield await flush()
    }
    if (batch.length > 0) yield await flush()
  }
  return Readable.from(generate())
}

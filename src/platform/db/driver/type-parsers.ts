import pg from 'pg'

const TIMESTAMPTZ = 1184
const TIMESTAMP = 1114
const DATE = 1082
const INT8 = 20
const INT8_ARRAY = 1016

/**
 * Timestamps are serialized in ONE place: the connection runs in UTC, and the driver hands
 * `YYYY-MM-DD HH:MM:SS` strings to the code (contract 00 §7). Dates read as `YYYY-MM-DD 00:00:00`.
 */
const timestamp = (value: string) => value.slice(0, 19)
/** A time of this process as the driver hands timestamps to the code (UTC, to the second), e.g. for a value set before its insert. */
export const timestampText = (time: Date) => time.toISOString().slice(0, 19).replace('T', ' ')
const date = (value: string) => `${value} 00:00:00`
const int8 = (value: string) => Number(value)
/** int4[] (no member of pg's TypeId enum): node-postgres's own array parser */
const INT4_ARRAY_OID: number = 1007
const int8Array = (value: string): unknown => pg.types.getTypeParser(INT4_ARRAY_OID, 'text')(value)
// node-postgres asks for a parser per column of every result: answered from a map, not rebuilt
const parsers = new Map<number, unknown>()
export const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    const key = format === 'binary' ? -1 - oid : oid
    let parser = parsers.get(key)
    if (parser === undefined) {
      parser =
        oid === TIMESTAMPTZ || oid === TIMESTAMP
          ? timestamp
          : oid === DATE
            ? date
            : oid === INT8
              ? int8
              : oid === INT8_ARRAY
                ? int8Array
                : format === 'binary'
                  ? pg.types.getTypeParser(oid, 'binary')
                  : pg.types.getTypeParser(oid, 'text')
      parsers.set(key, parser)
    }
    return parser
  },
}

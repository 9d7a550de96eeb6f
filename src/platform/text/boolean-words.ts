/** The words (lower case) that read as true and as false. */
export interface BooleanWords {
  true: readonly string[]
  false: readonly string[]
}

/** Settings and CSV cells: `true`/`1`/`yes`, `false`/`0`/`no`. */
export const BOOLEAN_WORDS: BooleanWords = { true: ['true', '1', 'yes'], false: ['false', '0', 'no'] }

/** Filters and flags of the query string (contract 00): `true`/`1`, `false`/`0`. */
export const QUERY_BOOLEAN_WORDS: BooleanWords = { true: ['true', '1'], false: ['false', '0'] }

/** Flags of the stable URL (contract 30): present without a value, `1`/`true`/`on`/`yes`, `0`/`false`/`off`/`no`. */
export const URL_FLAG_WORDS: BooleanWords = { true: ['', '1', 'true', 'on', 'yes'], false: ['0', 'false', 'off', 'no'] }

/** The one boolean-text parser: `raw` as a boolean in `words` (case-insensitive), or undefined. */
export function parseBooleanWord(raw: string, words: BooleanWords = BOOLEAN_WORDS): boolean | undefined {
  const word = raw.toLowerCase()
  if (words.true.includes(word)) return true
  if (words.false.includes(word)) return false
  return undefined
}

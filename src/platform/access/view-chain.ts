/**
 * What a target's `view` access is composed of, for explaining a decision (explain access). The
 * decision itself is always the target's own visibility rule (the one its lists use); a chain only
 * names the parts that rule checks, in order, so that the explanation can say which part decides.
 */
export interface ViewChain {
  /**
   * The records whose own `view` grants and module permission apply: the target first, then the
   * records it lives in (a file's directory, an entry's chapter), each visible only where the next is.
   */
  records: Array<{ target_entity: string; target_entity_id: string; permission?: string }>
  /** The folder whose visibility the records inherit (its path's view grants apply), or null. */
  folderId: number | null
  /** The target is soft-deleted: never visible, whatever the grants. */
  deleted?: boolean
}

/**
 * The items by `key`, in their order, each as `value` makes it (the item itself unless told), e.g. the
 * rows of a relation loader by the id of the record they belong to.
 */
export function groupBy<T, K>(items: Iterable<T>, key: (item: T) => K): Map<K, T[]>
export function groupBy<T, K, V>(items: Iterable<T>, key: (item: T) => K, value: (item: T) => V): Map<K, V[]>
export function groupBy<T, K, V>(items: Iterable<T>, key: (item: T) => K, value?: (item: T) => V) {
  const groups = new Map<K, Array<T | V>>()
  for (const item of items) {
    const k = key(item)
    const member = value ? value(item) : item
    const group = groups.get(k)
    if (group) group.push(member)
    else groups.set(k, [member])
  }
  return groups
}

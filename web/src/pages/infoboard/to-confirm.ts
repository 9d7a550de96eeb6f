import { api, store } from '../../core.ts'
import { isPending, pendingWrites } from '../../offline.ts'

/** Whether the user's confirmation of this post waits in the offline queue. */
export const confirmationPending = (id: number | null | undefined) =>
  isPending(pendingWrites.get(), 'POST', `/api/infoboard/posts/${id}/confirmation`)

/** How many published posts the user still has to confirm (the nav badge); undefined until known. */
export const toConfirm = store<number | undefined>(undefined)

export function refreshToConfirm(): void {
  void api
    .GET('/api/infoboard/posts', {
      params: { query: { filter: { confirmation: 'pending' }, selects: 'id', limit: 100 } },
    })
    .then(({ data }) => toConfirm.set(data ? data.filter((p) => !confirmationPending(p.id)).length : undefined))
}

import { api, store } from '../../core.ts'

/** How many published posts the user still has to confirm (the nav badge); undefined until known. */
export const toConfirm = store<number | undefined>(undefined)

export function refreshToConfirm(): void {
  void api
    .GET('/api/infoboard/posts', {
      params: { query: { filter: { confirmation: 'pending' }, selects: 'id', limit: 100 } },
    })
    .then(({ data }) => toConfirm.set(data ? data.length : undefined))
}

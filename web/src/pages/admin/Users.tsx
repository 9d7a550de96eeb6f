import { useState } from 'preact/hooks'
import { api, can, t } from '../../core.ts'
import { DataTable, Link, LoadState, PageTitle, useLoad } from '../../ui.tsx'

export default function Users() {
  const [text, setText] = useState('')
  const [query, setQuery] = useState('')
  const [deleted, setDeleted] = useState(false)
  const users = useLoad(
    () =>
      deleted
        ? api.GET('/api/users/deleted', { params: { query: { sort: 'username' } } })
        : api.GET('/api/users', {
            params: { query: { sort: 'username', limit: 100, filter: query ? { text: query } : {} } },
          }),
    [query, deleted],
  )
  return (
    <>
      <PageTitle text={t('users.title')} />
      <div class="toolbar">
        {can('users.create') && (
          <Link href="/admin/users/new" class="button">
            {t('users.new')}
          </Link>
        )}
        {can('users.administrate') && (
          <Link href="/admin/users/import" class="button">
            {t('users.import')}
          </Link>
        )}
      </div>
      <form
        role="search"
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault()
          setQuery(text)
        }}
      >
        <label for="user-search">{t('users.search')}</label>
        <input id="user-search" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit">{t('app.search')}</button>
        {can('users.administrate') && (
          <label class="check">
            <input type="checkbox" checked={deleted} onChange={(e) => setDeleted(e.currentTarget.checked)} />
            {t('users.deleted')}
          </label>
        )}
      </form>
      <LoadState loaded={users} empty={t('users.empty')}>
        {(list) => (
          <DataTable
            class="data"
            caption={t('users.title')}
            columns={[t('users.username'), t('app.name_'), t('users.active')]}
          >
            {list.map((u) => (
              <tr key={u.id}>
                <td>
                  <Link href={`/admin/users/${u.id}`}>{u.username}</Link>
                </td>
                <td>{u.full_name}</td>
                <td>{u.deleted_at ? t('shared.deleted') : u.active ? t('app.yes') : t('app.no')}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </LoadState>
    </>
  )
}

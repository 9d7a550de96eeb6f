import { api, formatTime, t } from '../core.ts'
import { Link, LoadState, PageTitle, useLoad } from '../ui.tsx'

interface FolderNode {
  id?: number
  name?: string | null
  type?: string
  parent_id?: number | null
}

function FolderTree({ folders, parent }: { folders: FolderNode[]; parent: number | null }) {
  const children = folders.filter((f) => (f.parent_id ?? null) === parent)
  if (children.length === 0) return null
  return (
    <ul class="tree">
      {children.map((f) => (
        <li key={f.id}>
          <span class="folder-name">{f.name}</span> <span class="tag">{f.type}</span>
          <FolderTree folders={folders} parent={f.id ?? null} />
        </li>
      ))}
    </ul>
  )
}

/** Folders and content the user may see, named in her language (the API names them by lang_id). */
export default function Content() {
  const folders = useLoad(() => api.GET('/api/folders', { params: { query: { sort: 'id' } } }), [])
  const posts = useLoad(() => api.GET('/api/infoboard/posts', { params: { query: { sort: '-id', limit: 20 } } }), [])
  const chapters = useLoad(() => api.GET('/api/manuals/chapters', { params: { query: { sort: 'id' } } }), [])
  const events = useLoad(
    () => api.GET('/api/calendar/events', { params: { query: { sort: 'starts_at', limit: 20 } } }),
    [],
  )
  const files = useLoad(() => api.GET('/api/filemanager/files', { params: { query: { sort: 'name' } } }), [])
  // folders whose parent is not visible are shown as roots
  const roots = (list: FolderNode[]) =>
    list.map((f) => (list.some((p) => p.id === f.parent_id) ? f : { ...f, parent_id: null }))

  return (
    <>
      <PageTitle text={t('content.title')} />
      <section aria-labelledby="h-folders">
        <h2 id="h-folders">{t('content.folders')}</h2>
        <LoadState loaded={folders} empty={t('content.noFolders')}>
          {(list) => <FolderTree folders={roots(list)} parent={null} />}
        </LoadState>
      </section>
      <section aria-labelledby="h-infoboard">
        <h2 id="h-infoboard">{t('content.infoboard')}</h2>
        <LoadState loaded={posts}>
          {(list) => (
            <ul class="items">
              {list.map((p) => (
                <li key={p.id}>
                  <Link href={`/infoboard/posts/${p.id}`}>{p.title}</Link>{' '}
                  <span class="meta">{formatTime(p.created_at)}</span>
                </li>
              ))}
            </ul>
          )}
        </LoadState>
      </section>
      <section aria-labelledby="h-manuals">
        <h2 id="h-manuals">{t('content.manuals')}</h2>
        <LoadState loaded={chapters}>
          {(list) => (
            <ul class="items">
              {list.map((c) => (
                <li key={c.id}>
                  <Link href={`/manuals/chapters/${c.id}`}>{c.title}</Link>
                </li>
              ))}
            </ul>
          )}
        </LoadState>
      </section>
      <section aria-labelledby="h-calendar">
        <h2 id="h-calendar">{t('content.calendar')}</h2>
        <LoadState loaded={events}>
          {(list) => (
            <ul class="items">
              {list.map((e) => (
                <li key={e.id}>
                  <Link href={`/calendar/events/${e.id}`}>{e.title}</Link>{' '}
                  <span class="meta">{formatTime(e.starts_at)}</span>
                </li>
              ))}
            </ul>
          )}
        </LoadState>
      </section>
      <section aria-labelledby="h-files">
        <h2 id="h-files">{t('content.files')}</h2>
        <LoadState loaded={files}>
          {(list) => (
            <ul class="items">
              {list.map((f) => (
                <li key={f.id}>
                  <Link href={`/filemanager/files/${f.id}`}>{f.name}</Link>
                </li>
              ))}
            </ul>
          )}
        </LoadState>
      </section>
    </>
  )
}

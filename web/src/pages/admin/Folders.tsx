import { useState } from 'preact/hooks'
import { api, asProblem, formatTime, isOneOf, t, type Problem } from '../../core.ts'
import { isMessageKey } from '../../messages.ts'
import { Field, Link, Loading, LoadState, PageTitle, ProblemMessage, Select, Status, useLoad } from '../../ui.tsx'

type Folder = {
  id?: number
  name?: string | null
  type?: string
  parent_id?: number | null
  translations?: Array<{ lang_id?: string; name?: string | null }>
}
type Explain = { allowed: boolean; reason: string | null }

function Tree({ folders, parent, selected }: { folders: Folder[]; parent: number | null; selected?: number }) {
  const children = folders.filter((f) => (f.parent_id ?? null) === parent)
  if (children.length === 0) return null
  return (
    <ul class="tree">
      {children.map((f) => (
        <li key={f.id}>
          <Link href={`/admin/folders/${f.id}`} aria-current={f.id === selected ? 'page' : undefined}>
            {f.name}
          </Link>{' '}
          <span class="tag">{f.type}</span>
          <Tree folders={folders} parent={f.id ?? null} selected={selected} />
        </li>
      ))}
    </ul>
  )
}

const NO_NAMES = { user: [], role: [], department: [] }
const GRANTEE_TYPES = ['user', 'role', 'department'] as const
/** A message whose key is built from an answer; nothing for a key the catalogue does not have. */
const folderText = (key: string) => (isMessageKey(key) ? t(key) : undefined)

function useNames(): Record<'user' | 'role' | 'department', Array<[string, string]>> {
  const names = useLoad(
    () =>
      Promise.all([
        api.GET('/api/users', { params: { query: { sort: 'username', limit: 500 } } }),
        api.GET('/api/roles', { params: { query: { sort: 'name' } } }),
        api.GET('/api/departments', { params: { query: { sort: 'name' } } }),
      ]).then(([users, roles, departments]) => ({
        data: {
          user: (users.data ?? []).map((u): [string, string] => [String(u.id), u.username ?? '']),
          role: (roles.data ?? []).map((r): [string, string] => [String(r.id), r.name ?? '']),
          department: (departments.data ?? []).map((d): [string, string] => [String(d.id), d.name ?? '']),
        },
      })),
    [],
  )
  return names.data ?? NO_NAMES
}

/** The folder's name in each language: one field per language, saved as `PUT {lang_id, name}`. */
function Translations({ folder, onSaved }: { folder: Folder; onSaved: () => void }) {
  const languages: Array<[string, string]> = [
    ['de-DE', 'Deutsch'],
    ['en-US', 'English'],
  ]
  const initial = Object.fromEntries(
    languages.map(([id]) => [id, folder.translations?.find((tr) => tr.lang_id === id)?.name ?? '']),
  )
  const [names, setNames] = useState<Record<string, string>>(initial)
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()
  const save = async (event: Event) => {
    event.preventDefault()
    setStatus(undefined)
    for (const [langId] of languages) {
      if (!names[langId] || names[langId] === initial[langId]) continue
      const { error } = await api.PUT('/api/folders/{id}', {
        params: { path: { id: folder.id! } },
        body: { lang_id: langId, name: names[langId] },
      })
      if (error) return setProblem(asProblem(error))
    }
    setProblem(undefined)
    setStatus(t('app.saved'))
    onSaved()
  }
  return (
    <form onSubmit={(e) => void save(e)} aria-label={t('folders.translations')}>
      <ProblemMessage problem={problem} fields={['name']} />
      {languages.map(([langId, label]) => (
        <Field
          key={langId}
          label={`${t('app.name_')} (${label})`}
          name={`name-${langId}`}
          field="name"
          value={names[langId]}
          onValue={(value) => setNames((n) => ({ ...n, [langId]: value }))}
          problem={problem}
          lang={langId.slice(0, 2)}
        />
      ))}
      <button type="submit">{t('app.save')}</button>
      <Status text={status} />
    </form>
  )
}

function FolderDetail({ id, folders, onChanged }: { id: number; folders: Folder[]; onChanged: () => void }) {
  const names = useNames()
  const [grantType, setGrantType] = useState<'user' | 'role' | 'department'>('department')
  const [grantee, setGrantee] = useState('')
  const [problem, setProblem] = useState<Problem>()
  const [explainUser, setExplainUser] = useState('')
  const [explain, setExplain] = useState<Explain>()
  const folder = useLoad(
    () => api.GET('/api/folders/{id}', { params: { path: { id }, query: { relations: 'translations' } } }),
    [id],
  )
  // the folder and its ancestors: their view grants apply down the tree
  const chain: Folder[] = []
  for (let f = folders.find((x) => x.id === id); f; f = folders.find((x) => x.id === f!.parent_id)) chain.push(f)
  const grants = useLoad(async () => {
    const results = await Promise.all(
      chain.map((f) =>
        api.GET('/api/entity-permissions/{targetEntity}/{targetEntityId}', {
          params: { path: { targetEntity: 'folder', targetEntityId: String(f.id) } },
        }),
      ),
    )
    const error = results.find((r) => r.error)?.error
    return {
      data: results.flatMap((r, i) =>
        (r.data ?? []).filter((g) => (g.key ?? 'view') === 'view').map((g) => ({ ...g, from: chain[i] })),
      ),
      error,
    }
  }, [id, folders.length])
  const nameOf = (type: string | undefined, granteeId: number | undefined) =>
    (type !== undefined && isOneOf(GRANTEE_TYPES, type) ? names[type] : []).find(
      ([value]) => value === String(granteeId),
    )?.[1] ?? `${type} ${granteeId}`

  const addGrant = async (event: Event) => {
    event.preventDefault()
    const { error } = await api.POST('/api/entity-permissions', {
      body: {
        key: 'view',
        permission_entity: grantType,
        permission_entity_id: Number(grantee),
        target_entity: 'folder',
        target_entity_id: id,
      },
    })
    if (error) return setProblem(asProblem(error))
    setProblem(undefined)
    grants.reload()
  }
  const removeGrant = async (grantId: number) => {
    const { error } = await api.DELETE('/api/entity-permissions/{id}', { params: { path: { id: grantId } } })
    if (error) return setProblem(asProblem(error))
    grants.reload()
  }
  const runExplain = async (event: Event) => {
    event.preventDefault()
    const { data, error } = await api.GET('/api/administration/access/explain', {
      params: {
        query: {
          user_id: Number(explainUser),
          target_entity: 'folder',
          target_entity_id: String(id),
          key: 'view',
        },
      },
    })
    if (!data) return setProblem(asProblem(error))
    setExplain(data)
  }

  if (folder.loading && !folder.data) return <Loading />
  const f = folder.data
  if (!f) return <ProblemMessage problem={folder.problem} />
  const options = names[grantType]
  return (
    <section aria-labelledby="h-folder" class="card">
      <h2 id="h-folder">{f.name}</h2>
      <h3>{t('folders.translations')}</h3>
      <Translations
        folder={f}
        onSaved={() => {
          folder.reload()
          onChanged()
        }}
      />
      <h3>{t('folders.grants')}</h3>
      <LoadState loaded={grants} empty={t('folders.noGrants')}>
        {(list) => (
          <ul class="grants">
            {list.map((g) => (
              <li key={g.id}>
                <span class="tag">{folderText(`folders.${g.permission_entity}`)}</span>{' '}
                {nameOf(g.permission_entity, g.permission_entity_id)} —{' '}
                {g.from.id === id ? t('folders.direct') : t('folders.inherited', { name: g.from.name ?? '' })}{' '}
                <span class="meta">{formatTime(g.created_at)}</span>{' '}
                {g.from.id === id && (
                  <button type="button" class="small" onClick={() => void removeGrant(g.id!)}>
                    {t('folders.removeGrant', { name: nameOf(g.permission_entity, g.permission_entity_id) })}
                  </button>
                )}
              </li>
            ))}
          </ul>
        )}
      </LoadState>
      <ProblemMessage problem={problem} fields={['permission_entity_id']} />
      <form onSubmit={(e) => void addGrant(e)} aria-label={t('folders.addGrant')}>
        <Select
          label={t('folders.granteeType')}
          name="permission_entity"
          value={grantType}
          onValue={(v) => {
            if (isOneOf(GRANTEE_TYPES, v)) setGrantType(v)
            setGrantee('')
          }}
          options={[
            ['department', t('folders.department')],
            ['role', t('folders.role')],
            ['user', t('folders.user')],
          ]}
          problem={problem}
        />
        <Select
          label={t('folders.grantee')}
          name="permission_entity_id"
          value={grantee}
          onValue={setGrantee}
          options={[['', '—'], ...options]}
          problem={problem}
        />
        <button type="submit" disabled={!grantee}>
          {t('folders.grant')}
        </button>
      </form>
      <form onSubmit={(e) => void runExplain(e)} aria-label={t('folders.explain')}>
        <Select
          label={t('folders.explainUser')}
          name="user_id"
          value={explainUser}
          onValue={setExplainUser}
          options={[['', '—'], ...names.user]}
          problem={problem}
        />
        <button type="submit" disabled={!explainUser}>
          {t('folders.explain')}
        </button>
      </form>
      {explain && (
        <p role="status">
          <strong>{explain.allowed ? t('folders.allowed') : t('folders.denied')}</strong> —{' '}
          {t('folders.reason', { reason: explain.reason ?? '' })}
        </p>
      )}
    </section>
  )
}

export default function Folders({ params }: { params: Record<string, string> }) {
  const folders = useLoad(() => api.GET('/api/folders', { params: { query: { sort: 'id' } } }), [])
  const selected = params.id ? Number(params.id) : undefined
  return (
    <>
      <PageTitle text={t('folders.title')} />
      <div class="split">
        <LoadState loaded={folders}>{(list) => <Tree folders={list} parent={null} selected={selected} />}</LoadState>
        {selected !== undefined && folders.data && (
          <FolderDetail key={selected} id={selected} folders={folders.data} onChanged={folders.reload} />
        )}
      </div>
    </>
  )
}

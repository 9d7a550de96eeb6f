import { useState } from 'preact/hooks'
import { api, asProblem, downloadBlob, formatTime, t, type Problem } from '../core.ts'
import { Link, Loading, PageTitle, ProblemMessage, useLoad } from '../ui.tsx'

function text(html: unknown): string {
  if (typeof html !== 'string') return ''
  return new DOMParser().parseFromString(html, 'text/html').body.textContent ?? ''
}

interface Item {
  title: string
  body?: string
  meta?: string
  fileId?: number
  children?: Array<{ href: string; title: string }>
}

async function loadItem(
  module: string,
  kind: string | undefined,
  id: number,
): Promise<{ data?: Item; error?: unknown }> {
  const key = kind ? `${module}/${kind}` : module
  const path = { params: { path: { id } } }
  switch (key) {
    case 'infoboard/posts': {
      const { data, error } = await api.GET('/api/infoboard/posts/{id}', path)
      return {
        data: data && { title: data.title ?? '', body: text(data.body), meta: formatTime(data.created_at) },
        error,
      }
    }
    case 'manuals/chapters': {
      const [{ data, error }, entries] = await Promise.all([
        api.GET('/api/manuals/chapters/{id}', path),
        api.GET('/api/manuals/chapters/{id}/entries', path),
      ])
      return {
        data: data && {
          title: data.title ?? '',
          children: (entries.data ?? []).map((e) => ({ href: `/manuals/entries/${e.id}`, title: e.title ?? '' })),
        },
        error,
      }
    }
    case 'manuals/entries': {
      const { data, error } = await api.GET('/api/manuals/entries/{id}', path)
      return { data: data && { title: data.title ?? '', body: text(data.body) }, error }
    }
    case 'calendar/events': {
      const { data, error } = await api.GET('/api/calendar/events/{id}', path)
      return {
        data: data && {
          title: data.title ?? '',
          meta: t('content.from', { start: formatTime(data.starts_at), end: formatTime(data.ends_at) }),
        },
        error,
      }
    }
    case 'filemanager/files': {
      const { data, error } = await api.GET('/api/filemanager/files/{id}', path)
      return {
        data: data && {
          title: data.name ?? '',
          meta: `${data.media_type ?? ''} · ${data.size ?? 0} B`,
          fileId: data.id ?? undefined,
        },
        error,
      }
    }
    case 'forms': {
      const { data, error } = await api.GET('/api/forms/{id}', path)
      return { data: data && { title: data.name ?? '' }, error }
    }
    case 'tasks/executions': {
      const { data, error } = await api.GET('/api/tasks/executions/{id}', path)
      return { data: data && { title: data.title ?? '', meta: formatTime(data.due_at) }, error }
    }
    default:
      return { error: { status: 404, detail: t('app.notFound') } }
  }
}

/** One item of content: the page a notification's URL or a shared item opens. */
export default function ContentItem({ params }: { params: Record<string, string> }) {
  const id = Number(params.id)
  const item = useLoad(() => loadItem(params.module, params.kind, id), [params.module, params.kind, params.id])
  const [problem, setProblem] = useState<Problem>()

  const download = async (fileId: number, name: string) => {
    const { data, error } = await api.GET('/api/filemanager/files/{id}/download', {
      params: { path: { id: fileId } },
      parseAs: 'blob',
    })
    if (!data) return setProblem(asProblem(error))
    downloadBlob(data, name)
  }

  if (item.loading) return <Loading />
  if (!item.data)
    return (
      <>
        <PageTitle text={t('content.item')} />
        <ProblemMessage problem={item.problem} />
        <p>
          <Link href="/content">{t('nav.content')}</Link>
        </p>
      </>
    )
  const data = item.data
  return (
    <article>
      <PageTitle text={data.title} />
      {data.meta && <p class="meta">{data.meta}</p>}
      {data.body && <div class="body-text">{data.body}</div>}
      {data.children && (
        <ul class="items">
          {data.children.map((c) => (
            <li key={c.href}>
              <Link href={c.href}>{c.title}</Link>
            </li>
          ))}
        </ul>
      )}
      {data.fileId !== undefined && (
        <button type="button" class="primary" onClick={() => void download(data.fileId!, data.title)}>
          {t('content.download', { name: data.title })}
        </button>
      )}
      <ProblemMessage problem={problem} />
    </article>
  )
}

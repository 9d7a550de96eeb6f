import { useEffect, useState } from 'preact/hooks'
import { api, asProblem, can, formatTime, t, useStore, type Problem } from '../../core.ts'
import { isPending, pendingWrites, replayed, wasQueued } from '../../offline.ts'
import { Link, Loading, PageTitle, ProblemMessage, Status, useLoad } from '../../ui.tsx'
import { refreshToConfirm } from './to-confirm.ts'

function text(html: unknown): string {
  if (typeof html !== 'string') return ''
  return new DOMParser().parseFromString(html, 'text/html').body.textContent ?? ''
}

/** One post: opening it records "seen"; a post that asks for it has the "Confirm that I have read this" button. */
export default function Post({ params }: { params: Record<string, string> }) {
  const id = Number(params.id)
  const post = useLoad(() => api.GET('/api/infoboard/posts/{id}', { params: { path: { id } } }), [id])
  const [confirmedAt, setConfirmedAt] = useState<string | null>()
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()
  // a confirmation made offline waits in the queue; once sent, the server's answer is loaded
  const confirmPending = isPending(useStore(pendingWrites), 'POST', `/api/infoboard/posts/${id}/confirmation`)
  useEffect(() => replayed.subscribe(post.reload), [])

  // "seen" is recorded once per post opened, not again when the post is loaded again
  useLoad(() => api.POST('/api/infoboard/posts/{id}/seen', { params: { path: { id } } }), [post.data?.id], {
    when: post.data !== undefined,
  })

  const confirm = async () => {
    const { data, error, response } = await api.POST('/api/infoboard/posts/{id}/confirmation', {
      params: { path: { id } },
    })
    if (wasQueued(response)) {
      setProblem(undefined)
      setStatus(t('offline.queued'))
      return refreshToConfirm()
    }
    if (!data) return setProblem(asProblem(error))
    setProblem(undefined)
    setConfirmedAt(data.confirmed_at)
    setStatus(t('infoboard.thanksConfirmed'))
    refreshToConfirm()
  }

  if (post.loading) return <Loading />
  if (!post.data)
    return (
      <>
        <PageTitle text={t('content.item')} />
        <ProblemMessage problem={post.problem} />
        <p>
          <Link href="/infoboard">{t('nav.infoboard')}</Link>
        </p>
      </>
    )
  const p = post.data
  const confirmed = confirmedAt ?? p.my_state?.confirmed_at ?? null
  return (
    <article>
      <PageTitle text={p.title ?? ''} />
      <p class="meta">
        {formatTime(p.published_at)}
        {p.pinned && ` · ${t('infoboard.pinned')}`}
      </p>
      <div class="body-text">{text(p.body)}</div>
      {p.requires_reading_confirmation && (
        <section class="confirmation" aria-labelledby="h-confirmation">
          <h2 id="h-confirmation">{t('infoboard.confirmationRequired')}</h2>
          {p.confirmation_due_at && <p>{t('infoboard.dueAt', { time: formatTime(p.confirmation_due_at) })}</p>}
          {confirmed ? (
            <p class="confirmed">{t('infoboard.youConfirmed', { time: formatTime(confirmed) })}</p>
          ) : confirmPending ? (
            <p class="confirmed pending">{t('infoboard.confirmPending')}</p>
          ) : (
            <button type="button" class="primary" onClick={() => void confirm()}>
              {t('infoboard.confirm')}
            </button>
          )}
        </section>
      )}
      <Status text={status} />
      <ProblemMessage problem={problem} />
      {can('infoboard.manage') && (
        <p class="actions">
          <Link href={`/infoboard/posts/${id}/edit`}>{t('app.edit')}</Link>{' '}
          <Link href={`/infoboard/posts/${id}/reach`}>{t('infoboard.reach')}</Link>
        </p>
      )}
      <p>
        <Link href="/infoboard">{t('nav.infoboard')}</Link>
      </p>
    </article>
  )
}

import { useState } from 'preact/hooks'
import { api, asProblem, navigate, t, type Problem } from '../../core.ts'
import { Checkbox, Field, Loading, PageTitle, ProblemMessage, Select, useLoad } from '../../ui.tsx'

/** `YYYY-MM-DD HH:MM:SS` (UTC, the API's form) → the value of a datetime-local input (local time). */
function toLocalInput(value: string | null | undefined): string {
  if (!value) return ''
  const date = new Date(value.replace(' ', 'T') + 'Z')
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000)
  return local.toISOString().slice(0, 16)
}
/** A datetime-local value (local time) → ISO 8601 in UTC. */
const fromLocalInput = (value: string) => new Date(value).toISOString()

type When = 'now' | 'schedule' | 'draft'

/** Writes or edits a post: title, text (paragraphs, bold, links: the server keeps the safe subset), channel, schedule, pin, comments, confirmation. */
export default function Write({ params }: { params: Record<string, string> }) {
  const id = params.id ? Number(params.id) : undefined
  const [title, setTitle] = useState('')
  const [body, setBody] = useState('')
  const [channel, setChannel] = useState('')
  const [when, setWhen] = useState<When>('now')
  const [at, setAt] = useState('')
  const [pinned, setPinned] = useState(false)
  const [comments, setComments] = useState(true)
  const [confirmation, setConfirmation] = useState(false)
  const [due, setDue] = useState('')
  const [notify, setNotify] = useState(false)
  const [published, setPublished] = useState(false)
  const [problem, setProblem] = useState<Problem>()

  const channelList = useLoad(
    () => api.GET('/api/folders', { params: { query: { filter: { type: 'infoboardChannel' }, sort: 'id' } } }),
    [id],
    { onAnswer: ({ data }) => setChannel((current) => current || String(data?.[0]?.id ?? '')) },
  )
  const channels = (channelList.data ?? []).map((c): [string, string] => [String(c.id), c.name ?? ''])
  const post = useLoad(() => api.GET('/api/infoboard/posts/{id}', { params: { path: { id: id! } } }), [id], {
    when: id !== undefined,
    onAnswer: ({ data, problem }) => {
      if (!data) return setProblem(problem)
      setTitle(data.title ?? '')
      setBody(data.body ?? '')
      setChannel(String(data.channel_id ?? ''))
      setPinned(data.pinned === true)
      setComments(data.comments_enabled !== false)
      setConfirmation(data.requires_reading_confirmation === true)
      setDue(toLocalInput(data.confirmation_due_at))
      const publishedAt = data.published_at
      const isPublished = !!publishedAt && new Date(publishedAt.replace(' ', 'T') + 'Z') <= new Date()
      setPublished(isPublished)
      setWhen(publishedAt === null || publishedAt === undefined ? 'draft' : isPublished ? 'now' : 'schedule')
      setAt(isPublished ? '' : toLocalInput(publishedAt))
    },
  })
  const loaded = id === undefined || post.data !== undefined

  const save = async (e: Event) => {
    e.preventDefault()
    const common = {
      title,
      body,
      channel_id: Number(channel),
      pinned,
      comments_enabled: comments,
      requires_reading_confirmation: confirmation,
      confirmation_due_at: confirmation && due ? fromLocalInput(due) : null,
    }
    const publishedAt =
      when === 'draft'
        ? null
        : when === 'schedule' && at
          ? fromLocalInput(at)
          : published
            ? undefined
            : new Date().toISOString()
    const result =
      id === undefined
        ? await api.POST('/api/infoboard/posts', {
            body: { ...common, ...(publishedAt === undefined ? {} : { published_at: publishedAt }) },
          })
        : await api.PUT('/api/infoboard/posts/{id}', {
            params: { path: { id } },
            body: { ...common, ...(publishedAt === undefined ? {} : { published_at: publishedAt }), notify },
          })
    if (!result.data) return setProblem(asProblem(result.error))
    navigate(`/infoboard/posts/${result.data.id}`)
  }

  if (!loaded && !problem) return <Loading />
  return (
    <>
      <PageTitle text={id === undefined ? t('infoboard.write') : t('infoboard.editPost')} />
      <form onSubmit={(e) => void save(e)} noValidate>
        <ProblemMessage
          problem={problem}
          fields={['title', 'body', 'channel_id', 'published_at', 'confirmation_due_at']}
        />
        <Field
          label={t('infoboard.postTitle')}
          name="title"
          value={title}
          onValue={setTitle}
          problem={problem}
          required
        />
        <div class="field">
          <label for="post-body">{t('infoboard.text')}</label>
          <textarea
            id="post-body"
            name="body"
            rows={8}
            value={body}
            aria-describedby="post-body-hint"
            onInput={(e) => setBody(e.currentTarget.value)}
          />
          <p class="hint" id="post-body-hint">
            {t('infoboard.textHint')}
          </p>
        </div>
        <Select
          label={t('infoboard.channel')}
          name="channel_id"
          value={channel}
          onValue={setChannel}
          options={channels}
          problem={problem}
        />
        <fieldset>
          <legend>{t('infoboard.publishing')}</legend>
          {(['now', 'schedule', 'draft'] as const).map((option) => (
            <div class="check" key={option}>
              <input
                type="radio"
                id={`when-${option}`}
                name="when"
                checked={when === option}
                onChange={() => setWhen(option)}
              />
              <label for={`when-${option}`}>{t(`infoboard.when.${option}`)}</label>
            </div>
          ))}
          {when === 'schedule' && (
            <Field
              label={t('infoboard.publishAt')}
              name="published_at"
              type="datetime-local"
              value={at}
              onValue={setAt}
              problem={problem}
            />
          )}
        </fieldset>
        <Checkbox label={t('infoboard.pin')} checked={pinned} onChange={setPinned} name="pinned" />
        <Checkbox
          label={t('infoboard.allowComments')}
          checked={comments}
          onChange={setComments}
          name="comments_enabled"
        />
        <Checkbox
          label={t('infoboard.requireConfirmation')}
          checked={confirmation}
          onChange={setConfirmation}
          name="requires_reading_confirmation"
        />
        {confirmation && (
          <Field
            label={t('infoboard.confirmBy')}
            name="confirmation_due_at"
            type="datetime-local"
            value={due}
            onValue={setDue}
            problem={problem}
          />
        )}
        {published && (
          <Checkbox label={t('infoboard.notifyEdit')} checked={notify} onChange={setNotify} name="notify" />
        )}
        <button type="submit" class="primary">
          {when === 'draft'
            ? t('infoboard.saveDraft')
            : when === 'schedule'
              ? t('infoboard.schedule')
              : published
                ? t('app.save')
                : t('infoboard.publish')}
        </button>
      </form>
    </>
  )
}

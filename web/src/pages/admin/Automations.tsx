import { useState } from 'preact/hooks'
import { api, asProblem, formatTime, isRecord, navigate, t, type Problem } from '../../core.ts'
import { Checkbox, Field, Link, LoadState, PageTitle, ProblemMessage, Status, useLoad } from '../../ui.tsx'

function Deliveries({ id }: { id: number }) {
  const deliveries = useLoad(
    () =>
      api.GET('/api/administration/automations/{id}/deliveries', {
        params: { path: { id }, query: { sort: '-id', limit: 50 } },
      }),
    [id],
  )
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()
  const test = async () => {
    const { error } = await api.POST('/api/administration/automations/{id}/test', { params: { path: { id } } })
    if (error) return setProblem(asProblem(error))
    setStatus(t('auto.testSent'))
    setTimeout(deliveries.reload, 800)
  }
  const redeliver = async (delivery: number) => {
    const { error } = await api.POST('/api/administration/automations/{id}/deliveries/{delivery}/redeliver', {
      params: { path: { id, delivery } },
    })
    if (error) return setProblem(asProblem(error))
    setStatus(t('auto.redelivered'))
    setTimeout(deliveries.reload, 800)
  }
  return (
    <section aria-labelledby="h-deliveries" class="card">
      <h2 id="h-deliveries">{t('auto.deliveries')}</h2>
      <div class="toolbar">
        <button type="button" onClick={() => void test()}>
          {t('auto.test')}
        </button>
        <button type="button" onClick={deliveries.reload}>
          {t('auto.refresh')}
        </button>
      </div>
      <Status text={status} />
      <ProblemMessage problem={problem} />
      <LoadState loaded={deliveries} empty={t('auto.noDeliveries')}>
        {(list) => (
          <ul class="deliveries">
            {list.map((d) => (
              <li key={d.id} class={`delivery ${d.status}`}>
                <p>
                  <strong class="delivery-status">{d.status}</strong> · {d.event_type} · {t('auto.attempts')}:{' '}
                  {d.attempts} · {formatTime(d.created_at)}
                </p>
                <details>
                  <summary>
                    {t('auto.request')} / {t('auto.response')} {d.response_status ?? ''}
                  </summary>
                  <p>
                    <code>
                      {d.method} {d.url}
                    </code>
                  </p>
                  <p>
                    {t('auto.response')}: {d.response_status ?? '—'} {d.error ?? ''}
                  </p>
                  {d.response_body && <pre>{d.response_body}</pre>}
                </details>
                {d.status !== 'pending' && (
                  <button
                    type="button"
                    class="small"
                    onClick={() => void redeliver(d.id!)}
                    aria-label={`${t('auto.redeliver')} #${d.id}`}
                  >
                    {t('auto.redeliver')}
                  </button>
                )}
              </li>
            ))}
          </ul>
        )}
      </LoadState>
    </section>
  )
}

export default function Automations({ params }: { params: Record<string, string> }) {
  const automations = useLoad(
    () => api.GET('/api/administration/automations', { params: { query: { sort: '-id' } } }),
    [],
  )
  const [name, setName] = useState('')
  const [event, setEvent] = useState('infoboardPost.created')
  const [url, setUrl] = useState('')
  const [active, setActive] = useState(true)
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()
  const selected = params.id ? Number(params.id) : undefined

  const action = () => ({ type: 'webhook', config: { url, method: 'POST', headers: {}, auth: null } })
  // the action's problems name `config.url`; in a create they are `actions.0.config.url`
  const normalise = (p: Problem, prefix: string): Problem => ({
    ...p,
    errors: Object.fromEntries(
      Object.entries(p.errors ?? {}).map(([k, v]) => [k.startsWith(prefix) ? k.slice(prefix.length) : k, v]),
    ),
  })
  const validate = async () => {
    setStatus(undefined)
    const { error } = await api.POST('/api/administration/automations/validate-action', { body: action() })
    if (error) return setProblem(asProblem(error))
    setProblem(undefined)
    setStatus(t('auto.valid'))
  }
  const create = async (e: Event) => {
    e.preventDefault()
    setStatus(undefined)
    const { data, error } = await api.POST('/api/administration/automations', {
      body: { name, event, active, actions: [action()] },
    })
    if (error) return setProblem(normalise(asProblem(error), 'actions.0.'))
    setProblem(undefined)
    automations.reload()
    const created: unknown = data
    if (isRecord(created) && typeof created.id === 'number' && created.id) navigate(`/admin/automations/${created.id}`)
  }

  return (
    <>
      <PageTitle text={t('auto.title')} />
      <div class="split">
        <div>
          <LoadState loaded={automations}>
            {(list) => (
              <ul class="items">
                {list.map((a) => (
                  <li key={a.id}>
                    <Link href={`/admin/automations/${a.id}`} aria-current={a.id === selected ? 'page' : undefined}>
                      {a.name}
                    </Link>{' '}
                    <span class="tag">{a.event}</span> {!a.active && <span class="tag">{t('users.inactive')}</span>}
                  </li>
                ))}
              </ul>
            )}
          </LoadState>
          <form class="card" onSubmit={(e) => void create(e)} aria-labelledby="h-new-webhook">
            <h2 id="h-new-webhook">{t('auto.new')}</h2>
            <ProblemMessage problem={problem} fields={['name', 'event', 'config.url', 'url']} />
            <Field label={t('app.name_')} name="name" value={name} onValue={setName} problem={problem} required />
            <Field label={t('auto.event')} name="event" value={event} onValue={setEvent} problem={problem} required />
            <Field
              label={t('auto.url')}
              name="url"
              field="config.url"
              type="url"
              value={url}
              onValue={setUrl}
              problem={problem}
              required
            />
            <Checkbox label={t('auto.active')} checked={active} onChange={setActive} />
            <div class="toolbar">
              <button type="button" onClick={() => void validate()}>
                {t('auto.validate')}
              </button>
              <button type="submit" class="primary">
                {t('app.create')}
              </button>
            </div>
            <Status text={status} />
          </form>
        </div>
        {selected !== undefined && <Deliveries key={selected} id={selected} />}
      </div>
    </>
  )
}

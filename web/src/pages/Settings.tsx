import { useEffect, useState } from 'preact/hooks'
import { api, asProblem, isOneOf, t, type Problem } from '../core.ts'
import { isMessageKey } from '../messages.ts'
import { Loading, PageTitle, ProblemMessage, Select, Status, useLoad } from '../ui.tsx'

const DIGESTS = ['immediate', 'daily', 'weekly'] as const

type Preferences = {
  email_digest?: string
  preferences?: Array<{ notification_setting_id?: number; key?: string; push?: boolean; email?: boolean }>
}

function base64UrlToBytes(value: string): Uint8Array<ArrayBuffer> {
  const base64 = value.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (value.length % 4)) % 4)
  const raw = atob(base64)
  const bytes = new Uint8Array(new ArrayBuffer(raw.length))
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i)
  return bytes
}

function PushOptIn() {
  const supported = 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window
  const [state, setState] = useState<'unknown' | 'on' | 'off'>('unknown')
  const [problem, setProblem] = useState<Problem>()
  useEffect(() => {
    if (!supported) return
    void navigator.serviceWorker.ready
      .then((registration) => registration.pushManager.getSubscription())
      .then((subscription) => setState(subscription ? 'on' : 'off'))
      .catch(() => setState('off'))
  }, [])

  const enable = async () => {
    setProblem(undefined)
    try {
      const permission = await Notification.requestPermission()
      if (permission !== 'granted') return setProblem({ detail: t('settings.pushDenied') })
      const key = await api.GET('/api/push/vapid-public-key')
      if (!key.data) return setProblem(asProblem(key.error))
      const registration = await navigator.serviceWorker.ready
      const subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: base64UrlToBytes(key.data.public_key!),
      })
      const { endpoint, expirationTime, keys } = subscription.toJSON()
      if (!endpoint || !keys?.p256dh || !keys.auth) throw new Error('the push subscription has no endpoint or keys')
      const { error } = await api.POST('/api/push-subscriptions', {
        body: {
          endpoint,
          expirationTime: expirationTime ?? null,
          keys: { p256dh: keys.p256dh, auth: keys.auth },
          user_agent: navigator.userAgent.slice(0, 512),
        },
      })
      if (error) return setProblem(asProblem(error))
      setState('on')
    } catch (error) {
      setProblem({
        detail: t('settings.pushFailed', { detail: error instanceof Error ? error.message : String(error) }),
      })
    }
  }

  return (
    <section aria-labelledby="h-push">
      <h2 id="h-push">{t('settings.pushDevice')}</h2>
      {!supported ? (
        <p>{t('settings.pushUnsupported')}</p>
      ) : state === 'on' ? (
        <p>{t('settings.pushEnabled')}</p>
      ) : (
        <button type="button" class="primary" onClick={() => void enable()} disabled={state === 'unknown'}>
          {t('settings.pushEnable')}
        </button>
      )}
      <ProblemMessage problem={problem} />
    </section>
  )
}

/** "Download my data" (GDPR Art. 15/20): asks for the archive, follows its status, fetches a single-use link. */
function DataExport() {
  const [exportId, setExportId] = useState<number>()
  const [status, setStatus] = useState<'pending' | 'ready' | 'failed' | 'expired'>()
  const [problem, setProblem] = useState<Problem>()
  // while the archive is being built, its status is asked for every 3 s
  useLoad(() => api.GET('/api/data-exports/{id}', { params: { path: { id: exportId! } } }), [exportId], {
    when: exportId !== undefined && status === 'pending',
    delay: 3000,
    pollWhile: (answer) => answer.data.status === 'pending',
    onAnswer: (answer) => (answer.data ? setStatus(answer.data.data.status) : setProblem(answer.problem)),
  })

  const request = async () => {
    setProblem(undefined)
    const { data, error } = await api.POST('/api/users/current/data-export')
    if (!data) return setProblem(asProblem(error))
    setExportId(data.data.id)
    setStatus(data.data.status)
  }
  const download = async () => {
    if (exportId === undefined) return
    const { data, error } = await api.POST('/api/data-exports/{id}/download-link', {
      params: { path: { id: exportId } },
    })
    if (!data) return setProblem(asProblem(error))
    window.location.assign(data.data.url)
  }

  return (
    <section aria-labelledby="h-export">
      <h2 id="h-export">{t('settings.export')}</h2>
      <p>{t('settings.exportHint')}</p>
      {status === 'pending' ? (
        <p role="status">{t('settings.exportPending')}</p>
      ) : status === 'ready' ? (
        <>
          <p role="status">{t('settings.exportReady')}</p>
          <button type="button" class="primary" onClick={() => void download()}>
            {t('settings.exportDownload')}
          </button>
        </>
      ) : (
        <>
          {status === 'failed' && <p role="alert">{t('settings.exportFailed')}</p>}
          <button type="button" class="primary" onClick={() => void request()}>
            {t('settings.exportRequest')}
          </button>
        </>
      )}
      <ProblemMessage problem={problem} />
    </section>
  )
}

export default function Settings() {
  const loaded = useLoad<Preferences>(() => api.GET('/api/users/current/notification-preferences'), [])
  const { data: prefs, setData: setPrefs } = loaded
  const [saveProblem, setProblem] = useState<Problem>()
  const problem = saveProblem ?? loaded.problem
  const [saved, setSaved] = useState<string>()

  const save = async (next: Preferences) => {
    setPrefs(next)
    setSaved(undefined)
    const { data, error } = await api.PUT('/api/users/current/notification-preferences', {
      body: {
        email_digest:
          next.email_digest !== undefined && isOneOf(DIGESTS, next.email_digest) ? next.email_digest : 'immediate',
        preferences: (next.preferences ?? []).map((p) => ({
          notification_setting_id: p.notification_setting_id!,
          push: p.push,
          email: p.email,
        })),
      },
    })
    if (error) return setProblem(asProblem(error))
    setProblem(undefined)
    if (data) setPrefs(data)
    setSaved(t('app.saved'))
  }

  const category = (key: string | undefined) => {
    const messageKey = `settings.category.${key}`
    const text = isMessageKey(messageKey) ? t(messageKey) : undefined
    return text === messageKey || !text ? (key ?? '') : text
  }

  return (
    <>
      <PageTitle text={t('settings.title')} />
      <ProblemMessage problem={problem} />
      {!prefs ? (
        <Loading />
      ) : (
        <form onSubmit={(e) => e.preventDefault()}>
          <Select
            label={t('settings.digest')}
            name="email_digest"
            value={prefs.email_digest ?? 'immediate'}
            onValue={(value) => void save({ ...prefs, email_digest: value })}
            options={[
              ['immediate', t('settings.digest.immediate')],
              ['daily', t('settings.digest.daily')],
              ['weekly', t('settings.digest.weekly')],
            ]}
            problem={problem}
          />
          <table class="prefs">
            <caption class="visually-hidden">{t('settings.title')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('settings.category')}</th>
                <th scope="col">{t('settings.push')}</th>
                <th scope="col">{t('settings.email')}</th>
              </tr>
            </thead>
            <tbody>
              {(prefs.preferences ?? []).map((p, index) => {
                const toggle = (channel: 'push' | 'email', value: boolean) =>
                  void save({
                    ...prefs,
                    preferences: prefs.preferences!.map((x, i) => (i === index ? { ...x, [channel]: value } : x)),
                  })
                return (
                  <tr key={p.notification_setting_id}>
                    <th scope="row">{category(p.key)}</th>
                    <td>
                      <input
                        type="checkbox"
                        checked={p.push}
                        aria-label={`${t('settings.push')}: ${category(p.key)}`}
                        onChange={(e) => toggle('push', e.currentTarget.checked)}
                      />
                    </td>
                    <td>
                      <input
                        type="checkbox"
                        checked={p.email}
                        aria-label={`${t('settings.email')}: ${category(p.key)}`}
                        onChange={(e) => toggle('email', e.currentTarget.checked)}
                      />
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
          <Status text={saved} />
        </form>
      )}
      <PushOptIn />
      <DataExport />
    </>
  )
}

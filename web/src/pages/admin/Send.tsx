import { useState } from 'preact/hooks'
import { api, asProblem, t, type Problem } from '../../core.ts'
import { Field, PageTitle, ProblemMessage, Status, useLoad } from '../../ui.tsx'

function MultiSelect(props: {
  label: string
  name: string
  options: Array<[number, string]>
  value: number[]
  onValue: (v: number[]) => void
  problem?: Problem
}) {
  const errors = Object.entries(props.problem?.errors ?? {})
    .filter(([k]) => k === props.name || k.startsWith(props.name + '.'))
    .flatMap(([, v]) => v)
  return (
    <div class="field">
      <label for={`ms-${props.name}`}>{props.label}</label>
      <select
        id={`ms-${props.name}`}
        multiple
        size={Math.min(6, Math.max(2, props.options.length))}
        aria-invalid={errors.length ? 'true' : undefined}
        aria-describedby={errors.length ? `ms-${props.name}-err` : undefined}
        onChange={(e) => props.onValue([...e.currentTarget.selectedOptions].map((o) => Number(o.value)))}
      >
        {props.options.map(([value, text]) => (
          <option key={value} value={value} selected={props.value.includes(value)}>
            {text}
          </option>
        ))}
      </select>
      {errors.length > 0 && (
        <p class="field-error" id={`ms-${props.name}-err`}>
          {errors.join(' ')}
        </p>
      )}
    </div>
  )
}

export default function Send() {
  const [title, setTitle] = useState('')
  const [body, setBody] = useState('')
  const [url, setUrl] = useState('/inbox')
  const [userIds, setUserIds] = useState<number[]>([])
  const [departmentIds, setDepartmentIds] = useState<number[]>([])
  const userList = useLoad(() => api.GET('/api/users', { params: { query: { sort: 'username', limit: 500 } } }), [])
  const departmentList = useLoad(() => api.GET('/api/departments', { params: { query: { sort: 'name' } } }), [])
  const users = (userList.data ?? []).map((u): [number, string] => [u.id!, `${u.username} (${u.full_name ?? ''})`])
  const departments = (departmentList.data ?? []).map((d): [number, string] => [d.id!, d.name ?? ''])
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState<string>()
  const send = async (e: Event) => {
    e.preventDefault()
    setStatus(undefined)
    const { error } = await api.POST('/api/notifications', {
      body: { title, body, url, user_ids: userIds, department_ids: departmentIds },
    })
    if (error) return setProblem(asProblem(error))
    setProblem(undefined)
    setStatus(t('send.sent'))
    setTitle('')
    setBody('')
  }
  return (
    <>
      <PageTitle text={t('send.title')} />
      <form class="card" onSubmit={(e) => void send(e)}>
        <ProblemMessage problem={problem} fields={['title', 'body', 'url', 'user_ids', 'department_ids']} />
        <Field label={t('send.subject')} name="title" value={title} onValue={setTitle} problem={problem} required />
        <Field label={t('send.body')} name="body" value={body} onValue={setBody} problem={problem} />
        <Field label={t('send.url')} name="url" value={url} onValue={setUrl} problem={problem} required />
        <MultiSelect
          label={t('send.users')}
          name="user_ids"
          options={users}
          value={userIds}
          onValue={setUserIds}
          problem={problem}
        />
        <MultiSelect
          label={t('send.departments')}
          name="department_ids"
          options={departments}
          value={departmentIds}
          onValue={setDepartmentIds}
          problem={problem}
        />
        <button type="submit" class="primary">
          {t('send.submit')}
        </button>
      </form>
      <Status text={status} />
    </>
  )
}

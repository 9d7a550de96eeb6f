import type { ComponentChildren, InputHTMLAttributes } from 'preact'
import { useEffect, useRef, useState, useCallback } from 'preact/hooks'
import { asProblem, BASE, fieldErrors, lang, navigate, t, useStore, type Problem } from './core.ts'

/** An in-app link: a real href (open in new tab works), navigation without reload on a plain click. */
export function Link(props: { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' }) {
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return
    event.preventDefault()
    navigate(props.href)
  }
  return (
    <a href={BASE + props.href} class={props.class} onClick={onClick} aria-current={props['aria-current']}>
      {props.children}
    </a>
  )
}

/** The page's heading: sets the document title and takes the focus after a navigation. */
export function PageTitle({ children, text }: { children?: ComponentChildren; text: string }) {
  const ref = useRef<HTMLHeadingElement>(null)
  useStore(lang)
  useEffect(() => {
    document.title = `${text} · ${t('app.name')}`
    ref.current?.focus({ preventScroll: true })
  }, [text])
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children ?? text}
    </h1>
  )
}

export function Loading() {
  return (
    <p class="loading" role="status">
      {t('app.loading')}
    </p>
  )
}

export function Empty({ text }: { text?: string }) {
  return <p class="empty">{text ?? t('app.empty')}</p>
}

/** A problem that names no field: shown at the top of the form or page. */
export function ProblemMessage({ problem, fields = [] }: { problem?: Problem; fields?: string[] }) {
  if (!problem) return null
  const others = Object.entries(problem.errors ?? {}).filter(
    ([key]) => !fields.some((f) => key === f || key.startsWith(f + '.')),
  )
  return (
    <div class="problem" role="alert">
      <p>{problem.detail ?? problem.title}</p>
      {others.length > 0 && (
        <ul>
          {others.map(([key, messages]) => (
            <li key={key}>
              <code>{key}</code>: {messages.join('; ')}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

let fieldCounter = 0
function useId(prefix: string): string {
  const ref = useRef<string | undefined>(undefined)
  if (!ref.current) ref.current = `${prefix}-${++fieldCounter}`
  return ref.current
}

/**
 * The input types this app uses, each as an `<input>`'s typed attribute: preact types an input's
 * attributes as a union keyed by the `type` literal, which a `type` held in a variable cannot satisfy.
 */
const inputTypes = {
  text: { type: 'text' },
  password: { type: 'password' },
  email: { type: 'email' },
  url: { type: 'url' },
  date: { type: 'date' },
  'datetime-local': { type: 'datetime-local' },
  number: { type: 'number' },
} satisfies Record<string, InputHTMLAttributes<HTMLInputElement>>

type InputProps = {
  label: string
  name: string
  value?: string
  onValue?: (value: string) => void
  problem?: Problem
  /** The problem's field path when it differs from `name`. */
  field?: string
  type?: keyof typeof inputTypes
  required?: boolean
  autocomplete?: string
  inputMode?: 'numeric' | 'text' | 'email'
  min?: number
  max?: number
  /** Shown beside the input (a button that acts on this field). */
  after?: ComponentChildren
  lang?: string
  hint?: string
}

/** A labelled input with the problem details of its field right below it (aria-describedby). */
export function Field({ label, name, value, onValue, problem, field, hint, after, type, ...rest }: InputProps) {
  const id = useId('f')
  const errors = fieldErrors(problem, field ?? name)
  const described = [errors.length ? `${id}-err` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ')
  const input = (
    <input
      id={id}
      name={name}
      value={value}
      onInput={(e) => onValue?.(e.currentTarget.value)}
      aria-invalid={errors.length > 0 ? 'true' : undefined}
      aria-describedby={described || undefined}
      {...(type ? inputTypes[type] : {})}
      {...rest}
    />
  )
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {after ? (
        <div class="field-row">
          {input}
          {after}
        </div>
      ) : (
        input
      )}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {errors.length > 0 && (
        <p class="field-error" id={`${id}-err`}>
          {errors.join(' ')}
        </p>
      )}
    </div>
  )
}

export function Select(props: {
  label: string
  name: string
  value: string
  onValue: (value: string) => void
  options: Array<[string, string]>
  problem?: Problem
  field?: string
}) {
  const id = useId('s')
  const errors = fieldErrors(props.problem, props.field ?? props.name)
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        name={props.name}
        value={props.value}
        onChange={(e) => props.onValue(e.currentTarget.value)}
        aria-invalid={errors.length > 0 ? 'true' : undefined}
        aria-describedby={errors.length ? `${id}-err` : undefined}
      >
        {props.options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
      {errors.length > 0 && (
        <p class="field-error" id={`${id}-err`}>
          {errors.join(' ')}
        </p>
      )}
    </div>
  )
}

export function Checkbox(props: {
  label: string
  checked: boolean
  onChange: (checked: boolean) => void
  name?: string
}) {
  const id = useId('c')
  return (
    <div class="check">
      <input
        id={id}
        type="checkbox"
        name={props.name}
        checked={props.checked}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
      <label for={id}>{props.label}</label>
    </div>
  )
}

/**
 * A table of records: one heading a column, the rows as children. The caption names the table for a
 * screen reader and stays hidden unless `showCaption`.
 */
export function DataTable(props: {
  columns: string[]
  caption?: string
  showCaption?: boolean
  class?: string
  children: ComponentChildren
}) {
  return (
    <table class={props.class}>
      {props.caption !== undefined && (
        <caption class={props.showCaption ? undefined : 'visually-hidden'}>{props.caption}</caption>
      )}
      <thead>
        <tr>
          {props.columns.map((column, i) => (
            <th key={i} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  )
}

/** A polite live region for short confirmations ("Saved."). */
export function Status({ text }: { text?: string }) {
  return (
    <p class="status" role="status" aria-live="polite">
      {text ?? ''}
    </p>
  )
}

export interface Loaded<T> {
  data?: T
  problem?: Problem
  loading: boolean
  reload: () => void
  /** Replaces the data with a newer answer the page already has (what a save returned). */
  setData: (data: T) => void
}

/** What a load answered: its data, or the problem why not. */
export interface Answer<T> {
  data?: T
  problem?: Problem
}

export interface LoadOptions<T> {
  /** `false`: nothing is asked (not loading, no data), e.g. a new record's page or a load that waits for another. */
  when?: boolean
  /** Told each answer the page still shows (not one dropped, not `setData`): a form takes what was loaded. */
  onAnswer?: (answer: Answer<T>) => void
  /** Each ask waits this many milliseconds; a change of `deps` meanwhile cancels it (a debounce). */
  delay?: number
  /** Asks again (after `delay`) while this holds for the answer: a background job's status. */
  pollWhile?: (data: T) => boolean
  /** Frees data no longer shown (replaced, dropped or unmounted), e.g. `URL.revokeObjectURL`. */
  release?: (data: T) => void
}

/**
 * The app's one way to load what a page shows: loading → data or problem; `reload()` loads again,
 * `setData()` takes a save's answer. An answer that arrives after the page moved on is dropped.
 * `deps` are the load's key: it runs again when one changes. Requests the page makes on opening
 * (a "seen" mark) go through here too, keyed so they are sent once per record.
 */
export function useLoad<T>(
  load: () => Promise<{ data?: T; error?: unknown }>,
  deps: unknown[],
  options: LoadOptions<T> = {},
): Loaded<T> {
  const enabled = options.when !== false
  const [state, setState] = useState<{ data?: T; problem?: Problem; loading: boolean }>({ loading: enabled })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    if (!enabled) {
      setState((s) => (s.loading || s.data !== undefined || s.problem ? { loading: false } : s))
      return
    }
    const { onAnswer, delay, pollWhile, release } = options
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const answer = (next: Answer<T>) => {
      if (!live) {
        if (next.data !== undefined) release?.(next.data)
        return
      }
      setState({ ...next, loading: false })
      onAnswer?.(next)
      if (next.data !== undefined && pollWhile?.(next.data)) setTick((n) => n + 1)
    }
    const ask = () =>
      load().then(
        (result) => answer({ data: result.data, problem: result.error ? asProblem(result.error) : undefined }),
        (error: unknown) => answer({ problem: asProblem(error) }),
      )
    setState((s) => ({ ...s, loading: true }))
    if (delay === undefined) void ask()
    else timer = setTimeout(() => void ask(), delay)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [...deps, enabled, tick])
  // what the page showed is freed once it shows something else, or is gone
  useEffect(() => {
    const { data } = state
    const { release } = options
    return () => {
      if (data !== undefined) release?.(data)
    }
  }, [state.data])
  const reload = useCallback(() => setTick((n) => n + 1), [])
  const setData = useCallback((data: T) => setState({ data, loading: false }), [])
  return { ...state, reload, setData }
}

/** Loading, error or empty states around a list, the list itself otherwise. */
export function LoadState<T>({
  loaded,
  empty,
  children,
}: {
  loaded: Loaded<T[]>
  empty?: string
  children: (data: T[]) => ComponentChildren
}) {
  if (loaded.loading && !loaded.data) return <Loading />
  if (loaded.problem)
    return (
      <div class="problem" role="alert">
        <p>{t('app.error', { detail: loaded.problem.detail ?? loaded.problem.title ?? '' })}</p>
        <button type="button" onClick={loaded.reload}>
          {t('app.retry')}
        </button>
      </div>
    )
  if (!loaded.data || loaded.data.length === 0) return <Empty text={empty} />
  return <>{children(loaded.data)}</>
}

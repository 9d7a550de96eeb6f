import { useState } from 'preact/hooks'
import { api, appPathOf, navigate, t, type Problem } from '../core.ts'
import { Loading, PageTitle, ProblemMessage, useLoad } from '../ui.tsx'

/** A shared item's stable link opened in the app: resolved, then its target's page. */
export default function Shared({ params }: { params: Record<string, string> }) {
  const [problem, setProblem] = useState<Problem>()
  useLoad(() => api.GET('/api/shared-items/{id}/resolve', { params: { path: { id: params.id } } }), [params.id], {
    onAnswer: ({ data, problem }) => {
      if (!data) return setProblem(problem)
      const path = appPathOf(data.url ?? undefined)
      if (path) navigate(path, { replace: true })
      else setProblem({ detail: data.url_context?.title ?? t('app.notFound') })
    },
  })
  return (
    <>
      <PageTitle text={t('content.sharedOpening')} />
      {problem ? <ProblemMessage problem={problem} /> : <Loading />}
    </>
  )
}

import { useEffect, useState } from 'preact/hooks'
import { api, appPathOf, asProblem, navigate, t, type Problem } from '../core.ts'
import { Loading, PageTitle, ProblemMessage } from '../ui.tsx'

/** A shared item's stable link opened in the app: resolved, then its target's page. */
export default function Shared({ params }: { params: Record<string, string> }) {
  const [problem, setProblem] = useState<Problem>()
  useEffect(() => {
    void api.GET('/api/shared-items/{id}/resolve', { params: { path: { id: params.id } } }).then(({ data, error }) => {
      if (!data) return setProblem(asProblem(error))
      const path = appPathOf(data.url ?? undefined)
      if (path) navigate(path, { replace: true })
      else setProblem({ detail: data.url_context?.title ?? t('app.notFound') })
    })
  }, [params.id])
  return (
    <>
      <PageTitle text={t('content.sharedOpening')} />
      {problem ? <ProblemMessage problem={problem} /> : <Loading />}
    </>
  )
}

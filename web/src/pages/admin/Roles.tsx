import { useState } from 'preact/hooks'
import { api, asProblem, can, t, type Problem } from '../../core.ts'
import { DataTable, Field, LoadState, PageTitle, ProblemMessage, useLoad } from '../../ui.tsx'

export default function Roles() {
  const roles = useLoad(() => api.GET('/api/roles', { params: { query: { sort: 'name' } } }), [])
  const departments = useLoad(() => api.GET('/api/departments', { params: { query: { sort: 'name' } } }), [])
  const [roleName, setRoleName] = useState('')
  const [permissions, setPermissions] = useState('')
  const [departmentName, setDepartmentName] = useState('')
  const [roleProblem, setRoleProblem] = useState<Problem>()
  const [departmentProblem, setDepartmentProblem] = useState<Problem>()

  const createRole = async (event: Event) => {
    event.preventDefault()
    const list = permissions
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
    const { error } = await api.POST('/api/roles', { body: { name: roleName, permissions: list } })
    if (error) return setRoleProblem(asProblem(error))
    setRoleProblem(undefined)
    setRoleName('')
    setPermissions('')
    roles.reload()
  }
  const createDepartment = async (event: Event) => {
    event.preventDefault()
    const { error } = await api.POST('/api/departments', { body: { name: departmentName } })
    if (error) return setDepartmentProblem(asProblem(error))
    setDepartmentProblem(undefined)
    setDepartmentName('')
    departments.reload()
  }

  return (
    <>
      <PageTitle text={t('roles.title')} />
      <section aria-labelledby="h-roles">
        <h2 id="h-roles">{t('roles.roles')}</h2>
        <LoadState loaded={roles}>
          {(list) => (
            <DataTable class="data" caption={t('roles.roles')} columns={[t('app.name_'), t('roles.permissions')]}>
              {list.map((r) => (
                <tr key={r.id}>
                  <td>{r.name}</td>
                  <td>{(r.permissions ?? []).join(', ')}</td>
                </tr>
              ))}
            </DataTable>
          )}
        </LoadState>
        {can('roles.manage') && (
          <form class="card" onSubmit={(e) => void createRole(e)} aria-labelledby="h-new-role">
            <h3 id="h-new-role">{t('roles.newRole')}</h3>
            <ProblemMessage problem={roleProblem} fields={['name', 'permissions']} />
            <Field
              label={t('app.name_')}
              name="name"
              value={roleName}
              onValue={setRoleName}
              problem={roleProblem}
              required
            />
            <Field
              label={t('roles.permissions')}
              name="permissions"
              value={permissions}
              onValue={setPermissions}
              problem={roleProblem}
            />
            <button type="submit">{t('app.create')}</button>
          </form>
        )}
      </section>
      <section aria-labelledby="h-departments">
        <h2 id="h-departments">{t('roles.departments')}</h2>
        <LoadState loaded={departments}>
          {(list) => (
            <DataTable class="data" caption={t('roles.departments')} columns={[t('app.name_'), t('roles.members')]}>
              {list.map((d) => (
                <tr key={d.id}>
                  <td>{d.name}</td>
                  <td>{(d.user_ids ?? []).length}</td>
                </tr>
              ))}
            </DataTable>
          )}
        </LoadState>
        {can('departments.manage') && (
          <form class="card" onSubmit={(e) => void createDepartment(e)} aria-labelledby="h-new-department">
            <h3 id="h-new-department">{t('roles.newDepartment')}</h3>
            <ProblemMessage problem={departmentProblem} fields={['name']} />
            <Field
              label={t('app.name_')}
              name="name"
              value={departmentName}
              onValue={setDepartmentName}
              problem={departmentProblem}
              required
            />
            <button type="submit">{t('app.create')}</button>
          </form>
        )}
      </section>
    </>
  )
}

import type { Db } from '../../platform/db/schema.js'
import { insertAutomation } from '../automations/index.js'
import { runFanOut } from '../notifications/index.js'
import { gradientPng, textPdf } from './demo-files.js'
import { completeJob, queuedFanOuts } from './tenants.queries.js'

/** One HTTP call into the app (in-process): the demo is created through the API, access rules and side effects included. */
export type DemoRequest = (request: {
  method: 'GET' | 'POST' | 'PUT'
  url: string
  token: string
  payload?: unknown
  files?: Record<string, { name: string; bytes: Buffer }>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an API response body as the demo reads it (a wrong guess fails the demo's test)
}) => Promise<any>

export interface DemoPeople {
  tenantId: number
  adminId: number
  adminToken: string
  password: string
  users: Record<'anna' | 'ben' | 'chloe' | 'deniz', number>
  departments: { store: number; warehouse: number }
}

export interface DemoContent {
  /** A shared item every employee may open (its stable URL redirects). */
  openSharedItemId: string
}

const inDays = (days: number, hour: number) => {
  const at = new Date()
  at.setUTCDate(at.getUTCDate() + days)
  at.setUTCHours(hour, 0, 0, 0)
  return at.toISOString()
}

/** Creates the demo's content through the API as the demo admin (and employees where they act themselves). */
export async function createDemoContent(db: Db, api: DemoRequest, people: DemoPeople): Promise<DemoContent> {
  const admin = people.adminToken
  const post = (url: string, payload: unknown, token = admin) => api({ method: 'POST', url, token, payload })
  const login = async (username: string): Promise<string> =>
    (
      await api({
        method: 'POST',
        url: '/api/auth/login',
        token: '',
        payload: { tenant: 'demo', username, password: people.password },
      })
    ).access_token
  const store = { permission_entity: 'department', permission_entity_id: people.departments.store }
  const warehouse = { permission_entity: 'department', permission_entity_id: people.departments.warehouse }

  const shiftLead = await post('/api/roles', {
    name: 'Shift lead',
    permissions: [
      'users.view',
      'departments.view',
      'calendar.view',
      'calendar.manage',
      'filemanager.view',
      'forms.view',
      'infoboard.view',
      'infoboard.manage',
      'manuals.view',
      'tasks.view',
      'tasks.manage',
      'surveys.view',
    ],
  })
  await api({
    method: 'PUT',
    url: `/api/users/${people.users.deniz}`,
    token: admin,
    payload: { role_id: shiftLead.id },
  })

  /** A folder named in German (its primary language) with an English translation. */
  const folder = async (type: string, de: string, en: string, extra: Record<string, unknown> = {}): Promise<number> => {
    const created = await post('/api/folders', { type, lang_id: 'de-DE', name: de, show_on_menu: true, ...extra })
    await api({
      method: 'PUT',
      url: `/api/folders/${created.id}`,
      token: admin,
      payload: { lang_id: 'en-US', name: en },
    })
    return created.id
  }
  const news = await folder('infoboardChannel', 'Neuigkeiten', 'News')
  const warehouseNews = await folder('infoboardChannel', 'Lager intern', 'Warehouse internal', {
    parent_id: news,
    entity_permissions: [{ key: 'view', ...warehouse }],
  })
  const forms = await folder('form', 'Formulare', 'Forms')
  const leaveForms = await folder('form', 'Urlaubsanträge', 'Leave requests', { parent_id: forms })
  await folder('department', 'Standorte', 'Locations')
  await folder('role', 'Funktionen', 'Job functions')
  const checklists = await folder('taskTemplate', 'Checklisten', 'Checklists')
  const opening = await folder('taskTemplate', 'Filialöffnung', 'Store opening', { parent_id: checklists })
  await folder('taskAssignment', 'Aufgabenverteilung', 'Task assignments')
  await folder('report', 'Berichte', 'Reports')
  await folder('reportDefinition', 'Berichtsvorlagen', 'Report definitions')
  await folder('survey', 'Umfragen', 'Surveys', {
    entity_permissions: [{ key: 'view', permission_entity: 'role', permission_entity_id: shiftLead.id }],
  })

  const welcome = await post('/api/infoboard/posts', {
    channel_id: news,
    title: 'Welcome to Workplace',
    body: '<p>This is the <strong>demo</strong> tenant: every module has some content.</p>',
  })
  await post('/api/infoboard/posts', {
    channel_id: news,
    title: 'New opening hours from Monday',
    body: '<p>We open at 8:00 and close at 20:00.</p>',
  })
  const party = await post('/api/infoboard/posts', {
    channel_id: news,
    title: 'Summer party',
    body: '<p>Please confirm that you have read this.</p>',
    requires_reading_confirmation: true,
  })
  await post('/api/infoboard/posts', {
    channel_id: warehouseNews,
    title: 'Forklift inspection on Monday',
    body: '<p>Only for the warehouse team.</p>',
  })
  const comment = await post(`/api/infoboard/posts/${party.id}/comments`, { body: 'Looking forward to it!' })

  const chapter = await post('/api/manuals/chapters', { title: 'Checkout' })
  const entry = await post(`/api/manuals/chapters/${chapter.id}/entries`, {
    title: 'Opening the till',
    body: '<p>Count the float, then sign the log.</p>',
  })
  await post(`/api/manuals/chapters/${chapter.id}/entries`, {
    title: 'Refunds',
    body: '<p>Refunds above 50 € need a shift lead.</p>',
  })

  const inventory = await post('/api/calendar/events', {
    title: 'Inventory count',
    starts_at: inDays(7, 6),
    ends_at: inDays(7, 14),
  })
  await post('/api/calendar/events', { title: 'Team meeting', starts_at: inDays(2, 9), ends_at: inDays(2, 10) })

  const marketing = await post('/api/filemanager/directories', { name: 'Marketing' })
  const management = await post('/api/filemanager/directories', { name: 'Management' })
  await post('/api/entity-permissions', {
    key: 'view',
    permission_entity: 'role',
    permission_entity_id: shiftLead.id,
    target_entity: 'filemanagerDirectory',
    target_entity_id: management.id,
  })
  await api({
    method: 'POST',
    url: '/api/filemanager/files',
    token: admin,
    payload: { directory_id: marketing.id, name: 'Shop window.png' },
    files: { file: { name: 'shop-window.png', bytes: gradientPng(320, 200, [20, 90, 160], [250, 200, 60]) } },
  })
  const pdf = await api({
    method: 'POST',
    url: '/api/filemanager/files',
    token: admin,
    payload: { directory_id: marketing.id, name: 'Opening hours.pdf' },
    files: {
      file: {
        name: 'opening-hours.pdf',
        bytes: textPdf(['Opening hours', 'Monday to Saturday: 8:00 - 20:00', 'Sunday: closed']),
      },
      poster: { name: 'poster.png', bytes: gradientPng(160, 226, [240, 240, 240], [20, 90, 160]) },
    },
  })
  await api({
    method: 'POST',
    url: '/api/filemanager/files',
    token: admin,
    payload: { directory_id: management.id, name: 'Staffing plan.pdf' },
    files: { file: { name: 'staffing.pdf', bytes: textPdf(['Staffing plan', 'Shift leads only']) } },
  })

  const form = await post('/api/forms', { name: 'Leave request', folder_id: leaveForms })
  const [anna, chloe] = [await login('anna'), await login('chloe')]
  const message = await post(
    `/api/forms/${form.id}/messages`,
    { data: { from: inDays(30, 0).slice(0, 10), days: 5, note: 'Family visit' } },
    anna,
  )
  await post(`/api/forms/${form.id}/messages`, { data: { from: inDays(45, 0).slice(0, 10), days: 2 } }, chloe)

  const task = await post('/api/tasks/executions', {
    title: 'Unlock the doors and switch on the lights',
    folder_id: opening,
    due_at: inDays(1, 7),
  })
  await post('/api/tasks/executions', {
    title: 'Check the fridges',
    folder_id: opening,
    due_at: inDays(1, 7),
    done_at: inDays(0, 7),
  })
  await post('/api/tasks/executions', { title: 'Restock shelf 4', due_at: inDays(3, 12) })

  const share = async (type: string, id: number, extra: Record<string, unknown> = {}): Promise<string> =>
    (await post('/api/administration/shared-items', { type, targetable_type: type, targetable_id: id, ...extra })).id
  const openSharedItemId = await share('calendarEvent', inventory.id)
  await share('filemanagerDirectory', marketing.id)
  await share('filemanagerFile', pdf.id)
  await share('form', form.id, { redirect_type: 'none' })
  await share('formMessage', message.id)
  await share('infoboardComment', comment.id)
  await share('infoboardPost', welcome.id, { entity_permissions: [store] })
  await share('manualChapter', chapter.id, { redirect_type: 'none' })
  await share('manualEntry', entry.id, { config: { show_history: true } })
  await share('taskExecution', task.id, {
    entity_permissions: [{ permission_entity: 'user', permission_entity_id: people.users.anna }],
  })

  // An operator sets the URL and activates it; stored directly because a placeholder URL would not pass validation.
  await insertAutomation(db, people.tenantId, {
    name: 'Post new infoboard posts to the team chat',
    event: 'infoboardPost.created',
    active: false,
    userId: people.adminId,
    actions: [
      {
        type: 'webhook',
        config: { url: 'https://chat.example.com/hooks/REPLACE-ME', method: 'POST', headers: {}, auth: null },
      },
    ],
  })

  await fanOutQueuedNotifications(db, people.tenantId)
  await readSomeNotifications(api, anna, 1)
  await readSomeNotifications(api, chloe, 2)
  return { openSharedItemId }
}

/** Runs the notification fan-outs the posts queued (idempotent: the worker finds nothing left to do). */
async function fanOutQueuedNotifications(db: Db, tenantId: number): Promise<void> {
  for (const job of await queuedFanOuts<Parameters<typeof runFanOut>[1]>(db, tenantId)) {
    await runFanOut(db, job.payload)
    await completeJob(db, job.id)
  }
}

/** The employee reads their `count` oldest notifications (through the API, like an app would). */
async function readSomeNotifications(api: DemoRequest, token: string, count: number): Promise<void> {
  const listed = await api({ method: 'GET', url: `/api/notifications?sort=created_at&limit=${count}`, token })
  const oldest: Array<{ id: string }> = Array.isArray(listed) ? listed : listed.data
  const now = new Date().toISOString()
  for (const notification of oldest) {
    await api({
      method: 'PUT',
      url: `/api/notifications/${notification.id}`,
      token,
      payload: { seen_at: now, read_at: now },
    })
  }
}

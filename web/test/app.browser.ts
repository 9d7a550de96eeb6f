/**
 * The web app in Debian's Chromium against a real server and database (`npm run test:browser`).
 * Elements are found by role and accessible name, as people and assistive technology find them.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { signInAt, startOidcProvider } from '../../test/helpers/oidc-provider.js'
import { axeViolations, launchBrowser, newContext, signIn, startServer, type Server } from './harness.js'

let server: Server
let browser: Browser
const report: string[] = []

before(async () => {
  ;[server, browser] = await Promise.all([startServer(), launchBrowser()])
})

after(async () => {
  await browser?.close()
  await server?.stop()
  if (report.length) console.log(['', '# browser test report', ...report.map((l) => `#   ${l}`)].join('\n'))
})

async function userId(username: string): Promise<number> {
  const users = await server.api<Array<{ id: number; username: string }>>(
    'admin',
    'GET',
    `/api/users?filter[username]=${username}&selects=id,username`,
  )
  return users[0].id
}

async function sendTo(username: string, title: string) {
  await server.api('admin', 'POST', '/api/notifications', {
    title,
    body: `<p>${title} body</p>`,
    url: '/inbox',
    user_ids: [await userId(username)],
  })
}

async function session(options: {
  phone?: boolean
  user: string
  locale?: string
}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await newContext(browser, options)
  const page = await context.newPage()
  await signIn(page, server.base, options.user, server.password)
  return { context, page }
}

async function expectNoSeriousViolations(page: Page, name: string) {
  const violations = await axeViolations(page)
  assert.deepEqual(
    violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
    `axe-core on ${name}`,
  )
}

/** The page has its data: no loading state left (the SSE stream keeps the network busy for good). */
async function settled(page: Page) {
  await page.waitForFunction(() => !document.querySelector('.loading, [aria-busy="true"]'), undefined, {
    timeout: 10_000,
  })
}

const badge = (page: Page) => page.getByRole('status').filter({ hasText: /unread|ungelesen/ })

describe('employee', () => {
  test('signs in, sees her inbox in German, and the unread badge changes live when the API sends her a notification', async () => {
    const context = await newContext(browser)
    const page = await context.newPage()
    await page.goto(`${server.base}/app/`)
    await page.waitForURL(/\/app\/sign-in/)
    // the sign-in page, before anyone is known: the browser's language (English)
    await page.getByLabel('Tenant').fill('demo')
    await page.getByLabel('Username').fill('anna')
    await page.getByLabel('Password').fill('wrong password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').waitFor()
    await page.getByLabel('Password').fill(server.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/\/app\/inbox$/)
    // Anna's language is German
    await page.getByRole('heading', { level: 1, name: 'Posteingang' }).waitFor()
    await page.getByText('Live-Aktualisierung an').waitFor()
    const before = Number((await badge(page).textContent())!.match(/\d+/)![0])

    const sentAt = Date.now()
    await sendTo('anna', 'Shift swap tomorrow')
    await page.getByRole('link', { name: /Shift swap tomorrow/ }).waitFor({ timeout: 5000 })
    await badge(page)
      .filter({ hasText: String(before + 1) })
      .waitFor({ timeout: 5000 })
    const seen = Date.now() - sentAt
    report.push(`notification sent through the API → visible in the inbox: ${seen} ms`)
    // "within a second" is the product's aim (reported above); the bound leaves room for a loaded CI machine
    assert.ok(seen < 2000, `the notification appeared after ${seen} ms`)
    // the navigation's badge says the same
    const navBadge = page.getByRole('link', { name: /Posteingang/ })
    assert.match((await navBadge.textContent()) ?? '', new RegExp(String(before + 1)))
    await context.close()
  })

  test('measures the inbox first render from navigation start (reported, not asserted)', async () => {
    const { context, page } = await session({ user: 'ben' })
    const timings: number[] = []
    const shifts: number[] = []
    for (let i = 0; i < 3; i++) {
      await page.goto(`${server.base}/app/inbox`)
      await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor()
      await page.waitForFunction(() => performance.getEntriesByName('inbox-rendered').length > 0)
      await page.getByText('Live updates on').waitFor()
      timings.push(await page.evaluate(() => Math.round(performance.getEntriesByName('inbox-rendered')[0].startTime)))
      // cumulative layout shift of the load: the skeleton, the count and the badge keep their places
      shifts.push(
        await page.evaluate(
          () =>
            new Promise<number>((resolve) => {
              let total = 0
              new PerformanceObserver((list) => {
                for (const entry of list.getEntries() as Array<
                  PerformanceEntry & { value: number; hadRecentInput: boolean }
                >)
                  if (!entry.hadRecentInput) total += entry.value
              }).observe({ type: 'layout-shift', buffered: true })
              setTimeout(() => resolve(Math.round(total * 1000) / 1000), 200)
            }),
        ),
      )
    }
    report.push(`inbox first render on a full page load (ms from navigation start, 3 loads): ${timings.join(', ')}`)
    report.push(`inbox cumulative layout shift (3 loads): ${shifts.join(', ')}`)
    assert.ok(Math.max(...shifts) < 0.1, `layout shift on the inbox: ${shifts.join(', ')}`)
    await context.close()
  })

  test('the stream resumes with Last-Event-ID after a network drop: nothing sent meanwhile is lost', async () => {
    const { context, page } = await session({ user: 'ben' })
    await page.getByText('Live updates on').waitFor()
    const streamHeaders: Array<string | undefined> = []
    page.on('request', (request) => {
      if (request.url().endsWith('/api/notifications/stream')) streamHeaders.push(request.headers()['last-event-id'])
    })
    await context.setOffline(true)
    await page.getByText('Reconnecting…').waitFor()
    await sendTo('ben', 'Sent while offline')
    await new Promise((r) => setTimeout(r, 300))
    await context.setOffline(false)
    await page.getByRole('link', { name: /Sent while offline/ }).waitFor({ timeout: 5000 })
    assert.ok(streamHeaders.length >= 1, 'the stream was opened again')
    assert.ok(streamHeaders.at(-1), `the reconnect sent Last-Event-ID (headers seen: ${JSON.stringify(streamHeaders)})`)
    await context.close()
  })

  test('marks one and then all notifications read; filters by type; opens a notification at its URL; back button', async () => {
    const { context, page } = await session({ user: 'chloe' })
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor()
    await page.getByText('Live updates on').waitFor()
    const count = async () => Number((await badge(page).textContent())!.match(/\d+/)![0])
    const start = await count()
    assert.ok(start >= 2, `chloe has unread notifications (${start})`)
    await page.getByRole('button', { name: 'Mark as read' }).first().click()
    await badge(page)
      .filter({ hasText: String(start - 1) })
      .waitFor()

    const types = await page.getByLabel('Type').locator('option').allTextContents()
    assert.ok(types.includes('infoboardPostCreated'), `type filter options: ${types.join(', ')}`)
    await page.getByLabel('Type').selectOption('infoboardPostCreated')
    await page.waitForFunction(() => {
      const shown = [...document.querySelectorAll('.n-meta span')].map((e) => e.textContent)
      return shown.length > 0 && shown.every((t) => t === 'infoboardPostCreated')
    })
    await page.getByLabel('Type').selectOption('')

    await page.getByRole('button', { name: 'Mark all as read' }).click()
    await badge(page).filter({ hasText: '0 unread' }).waitFor()
    await page.getByRole('checkbox', { name: 'Unread only' }).check()
    await page.getByText('No notifications.').waitFor()
    await page.getByRole('checkbox', { name: 'Unread only' }).uncheck()

    // a notification opens the page its URL names (an infoboard post)
    await page
      .getByRole('link', { name: /Summer party/ })
      .first()
      .click()
    await page.waitForURL(/\/app\/infoboard\/posts\/\d+$/)
    await page.getByRole('heading', { level: 1, name: 'Summer party' }).waitFor()
    await page.goBack()
    await page.waitForURL(/\/app\/inbox$/)
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor()
    // folders and content, then back
    await page.getByRole('link', { name: 'Folders and content' }).click()
    await page.waitForURL(/\/app\/content$/)
    await page.getByRole('heading', { level: 2, name: 'Folders' }).waitFor()
    await page.goBack()
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor()
    await page.goForward()
    await page.getByRole('heading', { level: 1, name: 'Folders and content' }).waitFor()
    // an employee sees no administrator page
    assert.equal(await page.getByRole('navigation', { name: 'Administration' }).count(), 0)
    await page.goto(`${server.base}/app/admin/users`)
    await page.getByRole('heading', { level: 1, name: 'You may not see this page.' }).waitFor()
    await context.close()
  })

  test('opens a shared item through its stable link, and downloads a file', async () => {
    const { context, page } = await session({ user: 'ben' })
    const items = await server.api<Array<{ id: string; type: string }>>('ben', 'GET', '/api/shared-items')
    const manual = items.find((i) => i.type === 'manualEntry')!
    await page.goto(`${server.base}/app/shared/${manual.id}`)
    await page.waitForURL(/\/app\/manuals\/entries\/\d+$/)
    await page.getByRole('heading', { level: 1, name: 'Opening the till' }).waitFor()
    await page.getByRole('link', { name: 'Folders and content' }).click()
    await page.getByRole('link', { name: 'Opening hours.pdf' }).click()
    const download = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Download Opening hours.pdf' }).click()
    assert.equal((await download).suggestedFilename(), 'Opening hours.pdf')
    await context.close()
  })

  test('notification preferences are saved; push opt-in registers the service worker', async () => {
    const { context, page } = await session({ user: 'ben' })
    await page.getByRole('link', { name: 'Notification settings' }).click()
    await page.getByRole('heading', { level: 1, name: 'Notification settings' }).waitFor()
    await page.getByRole('checkbox', { name: 'Email: Infoboard' }).uncheck()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await page.getByLabel('Email digest').selectOption('daily')
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const prefs = await server.api<{ email_digest: string; preferences: Array<{ key: string; email: boolean }> }>(
      'ben',
      'GET',
      '/api/users/current/notification-preferences',
    )
    assert.equal(prefs.email_digest, 'daily')
    assert.equal(prefs.preferences.find((p) => p.key === 'infoboard')!.email, false)
    // the service worker is installed with scope /app/; the opt-in button is offered
    const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope)
    assert.equal(scope, `${server.base}/app/`)
    await page.getByRole('button', { name: 'Enable push notifications on this device' }).waitFor()
    await context.close()
  })

  test('the service worker shows a push message (delivered through the DevTools protocol)', async () => {
    const context = await newContext(browser)
    await context.grantPermissions(['notifications'], { origin: server.base })
    const page = await context.newPage()
    await signIn(page, server.base, 'ben', server.password)
    await page.evaluate(async () => void (await navigator.serviceWorker.ready))
    // deliver a push through the DevTools protocol, the way the push service would wake the worker
    const cdp = await context.newCDPSession(page)
    const registered = new Promise<string>((resolve) => {
      cdp.on(
        'ServiceWorker.workerRegistrationUpdated',
        (event: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
          const found = event.registrations.find((r) => r.scopeURL === `${server.base}/app/`)
          if (found) resolve(found.registrationId)
        },
      )
    })
    await cdp.send('ServiceWorker.enable')
    const registration = await registered
    await cdp.send('ServiceWorker.deliverPushMessage', {
      origin: server.base,
      registrationId: registration,
      data: JSON.stringify({
        id: 'n-1',
        type: 'general',
        title: 'Push title',
        body: '<p>Push body</p>',
        url: '/infoboard/posts/1',
      }),
    })
    const shown = await page.waitForFunction(async () => {
      const registration = await navigator.serviceWorker.ready
      const list = await registration.getNotifications()
      return list.map((n) => ({ title: n.title, body: n.body, url: (n.data as { url: string }).url }))[0]
    })
    assert.deepEqual(await shown.jsonValue(), { title: 'Push title', body: 'Push body', url: '/infoboard/posts/1' })
    await context.close()
  })

  test('single sign-on: the button appears for a tenant with SSO, and the provider signs her in', async () => {
    const provider = await startOidcProvider(`${server.base}/api/auth/oidc/callback`)
    provider.accounts.set('sub-ben', { sub: 'sub-ben', preferred_username: 'ben' })
    const context = await newContext(browser)
    const page = await context.newPage()
    try {
      await page.goto(`${server.base}/app/sign-in`)
      await page.getByLabel('Tenant').fill('demo')
      await page.waitForTimeout(1200)
      assert.equal(await page.getByRole('button', { name: 'Continue with single sign-on' }).count(), 0, 'no SSO yet')
      await server.api('admin', 'PUT', '/api/administration/oidc', {
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
      })
      // a first sign-in never links by name (issue 39): an administrator links Ben's identity
      await server.api('admin', 'PUT', `/api/users/${await userId('ben')}/oidc-identity`, { subject: 'sub-ben' })
      await page.reload()
      await page.getByLabel('Tenant').fill('demo')
      await page.getByRole('button', { name: 'Continue with single sign-on' }).click()
      // the provider's own (development) login and consent pages
      await page.waitForURL((url) => url.origin === provider.issuer)
      await page.locator('input[name="login"]').fill('sub-ben')
      await page.locator('input[name="password"]').fill('any')
      await page.locator('button[type="submit"]').click()
      await page.locator('button[type="submit"]').click()
      await page.waitForURL(/\/app\/inbox$/)
      await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor()
      await page.getByText('Signed in as Ben Miller').waitFor()
    } finally {
      await context.close()
      await server.api('admin', 'DELETE', '/api/administration/oidc').catch(() => undefined)
      await provider.close()
    }
  })

  test("login CSRF: opening the app with an attacker's login code does not sign the victim in", async () => {
    const callback = `${server.base}/api/auth/oidc/callback`
    const provider = await startOidcProvider(callback)
    provider.accounts.set('sub-attacker', { sub: 'sub-attacker' })
    const context = await newContext(browser)
    const page = await context.newPage()
    try {
      await server.api('admin', 'PUT', '/api/administration/oidc', {
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
      })
      await server.api('admin', 'PUT', `/api/users/${await userId('ben')}/oidc-identity`, { subject: 'sub-attacker' })
      // the attacker signs in at the provider with their own account, outside any browser of the victim
      const codes: string[] = []
      for (let i = 0; i < 2; i++) {
        const started = await fetch(
          `${server.base}/api/auth/oidc/demo/start?redirect_uri=${encodeURIComponent(`${server.base}/app/sign-in`)}`,
          { redirect: 'manual' },
        )
        const cookie = (started.headers.get('set-cookie') ?? '').split(';')[0]!
        const back = await signInAt(started.headers.get('location')!, 'sub-attacker', callback)
        const done = await fetch(back, { redirect: 'manual', headers: cookie ? { cookie } : {} })
        const location = new URL(done.headers.get('location')!)
        codes.push(
          new URLSearchParams(location.hash.slice(1)).get('login_code') ?? location.searchParams.get('login_code')!,
        )
      }
      // the victim's browser opens the planted links (fragment and query string)
      for (const url of [
        `${server.base}/app/sign-in#login_code=${codes[0]}`,
        `${server.base}/app/sign-in?login_code=${codes[1]}`,
      ]) {
        await page.goto(url)
        await page.waitForTimeout(1500)
        assert.match(page.url(), /\/app\/sign-in/, 'still on the sign-in page')
        assert.equal(await page.getByText(/Signed in as/).count(), 0, `signed in by ${url}`)
        await page.getByLabel('Username').waitFor()
      }
      const referrer = await page.evaluate(async () => (await fetch(location.href)).headers.get('referrer-policy'))
      assert.equal(referrer, 'no-referrer')
      // neither code was redeemed by the victim's browser
      for (const code of codes) {
        const redeemed = await fetch(`${server.base}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ login_code: code }),
        })
        assert.equal(redeemed.status, 200, 'the code was still unused')
      }
    } finally {
      await context.close()
      await server.api('admin', 'DELETE', '/api/administration/oidc').catch(() => undefined)
      await provider.close()
    }
  })

  test('German and English: switching the language changes every string and is stored as her language', async () => {
    const { context, page } = await session({ user: 'deniz' })
    await page.getByRole('heading', { level: 1, name: 'Posteingang' }).waitFor()
    await page.getByRole('link', { name: 'Ordner und Inhalte' }).click()
    await page.getByText('Formulare').first().waitFor()
    await page.getByLabel('Sprache').selectOption('en')
    await page.getByRole('heading', { level: 1, name: 'Folders and content' }).waitFor()
    // the folders are named in the new language too (the API names them by lang_id)
    await page.getByText('Forms', { exact: true }).first().waitFor()
    const me = await server.api<{ lang_id: string }>('deniz', 'GET', '/api/users/current?selects=lang_id')
    assert.equal(me.lang_id, 'en-US')
    await page.getByLabel('Language').selectOption('de')
    await page.getByRole('heading', { level: 1, name: 'Ordner und Inhalte' }).waitFor()
    await context.close()
  })

  test('phone width (390 px): sign-in, inbox, content and settings fit the screen and pass axe-core', async () => {
    const context = await newContext(browser, { phone: true })
    const page = await context.newPage()
    await page.goto(`${server.base}/app/sign-in`)
    await expectNoSeriousViolations(page, 'sign-in (phone)')
    await signIn(page, server.base, 'ben', server.password)
    for (const [path, heading] of [
      ['/inbox', 'Inbox'],
      ['/content', 'Folders and content'],
      ['/settings', 'Notification settings'],
    ]) {
      await page.goto(`${server.base}/app${path}`)
      await page.getByRole('heading', { level: 1, name: heading }).waitFor()
      await settled(page)
      const width = await page.evaluate(() => document.documentElement.scrollWidth)
      assert.ok(width <= 390, `${path} is ${width} px wide at 390 px`)
      await expectNoSeriousViolations(page, `${path} (phone)`)
    }
    await context.close()
  })
})

describe('administrator', () => {
  test('imports a CSV with one bad row, sees that row’s error, fixes it and imports', async () => {
    const { context, page } = await session({ user: 'admin' })
    await page.getByRole('link', { name: 'Users' }).click()
    await page.getByRole('link', { name: 'Import CSV' }).click()
    await page.getByRole('heading', { level: 1, name: 'Import users from CSV' }).waitFor()
    const roles = await server.api<Array<{ id: number; name: string }>>('admin', 'GET', '/api/roles')
    const role = roles.find((r) => r.name === 'Employee')!.id
    const csv = (email: string) =>
      Buffer.from(
        `username,password,first_name,last_name,email,role_id\nerik,long-enough-password,Erik,Berg,erik@example.com,${role}\nfrida,long-enough-password,Frida,Nilsson,${email},${role}\n`,
      )
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'users.csv', mimeType: 'text/csv', buffer: csv('not-an-email') })
    await page.getByRole('button', { name: 'Check file' }).click()
    const errors = page.getByRole('table', { name: 'Rows with errors' })
    await errors.waitFor()
    const row = errors.getByRole('row', { name: /Line 3/ })
    assert.match((await row.textContent()) ?? '', /email/)
    assert.equal(await errors.getByRole('row', { name: /Line 2/ }).count(), 0, 'only the bad row has an error')
    assert.equal(await page.getByRole('button', { name: /Import \d+ users/ }).count(), 0, 'nothing to import yet')
    // nothing was saved
    assert.equal((await server.api<unknown[]>('admin', 'GET', '/api/users?filter[username]=erik')).length, 0)

    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'users.csv', mimeType: 'text/csv', buffer: csv('frida@example.com') })
    await page.getByRole('button', { name: 'Check file' }).click()
    await page.getByText('2 new users').waitFor()
    assert.equal(await errors.count(), 0)
    await page.getByRole('button', { name: 'Import 2 users' }).click()
    await page.getByRole('status').filter({ hasText: '2 users imported.' }).waitFor()
    assert.equal((await server.api<unknown[]>('admin', 'GET', '/api/users?filter[username]=frida')).length, 1)
    await context.close()
  })

  test('an API problem is shown next to the field it names', async () => {
    const { context, page } = await session({ user: 'admin' })
    await page.goto(`${server.base}/app/admin/users/new`)
    await page.getByRole('heading', { level: 1, name: 'New user' }).waitFor()
    await page.getByRole('textbox', { name: 'Username' }).fill('x!')
    await page.getByRole('button', { name: 'Create' }).click()
    const field = page.getByRole('textbox', { name: 'Username' })
    await page.waitForFunction(() => document.querySelector('[aria-invalid="true"]'))
    assert.equal(await field.getAttribute('aria-invalid'), 'true')
    const describedBy = (await field.getAttribute('aria-describedby'))!
    const message = await page.locator(`#${describedBy}`).textContent()
    assert.ok(message && message.length > 3, `the username's problem is next to it: ${message}`)
    await context.close()
  })

  test('restricts a folder to another department: the employee no longer sees it; explain access says why', async () => {
    const employee = await session({ user: 'anna' })
    await employee.page.getByRole('link', { name: 'Ordner und Inhalte' }).click()
    await employee.page.getByText('Urlaubsanträge').waitFor()
    assert.equal(await employee.page.getByText('Formulare', { exact: true }).count(), 1)

    const { context, page } = await session({ user: 'admin' })
    await page.getByRole('link', { name: 'Folders and access' }).click()
    await page.getByRole('link', { name: 'Forms', exact: true }).click()
    await page.waitForURL(/\/app\/admin\/folders\/\d+$/)
    await page.getByRole('heading', { level: 2, name: 'Forms' }).waitFor()
    await page.getByText('No view grants').waitFor()
    await page.getByLabel('Grantee type').selectOption('department')
    await page.getByLabel('Grantee', { exact: true }).selectOption({ label: 'Warehouse' })
    await page.getByRole('button', { name: 'Add view grant' }).click()
    await page.getByText(/Warehouse — direct/).waitFor()
    // the child folder shows the grant as inherited
    await page.getByRole('link', { name: 'Leave requests' }).click()
    await page.getByText(/Warehouse — inherited from Forms/).waitFor()
    // translations: the English name is edited, the German one stays
    await page.getByLabel('Name (English)').fill('Holiday requests')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('link', { name: 'Holiday requests' }).waitFor()
    assert.equal(await page.getByLabel('Name (Deutsch)').inputValue(), 'Urlaubsanträge')
    await page.getByLabel('User', { exact: true }).selectOption({ label: 'anna' })
    await page.getByRole('button', { name: 'Explain access' }).click()
    await page
      .getByRole('status')
      .filter({ hasText: /Denied/ })
      .waitFor()

    await employee.page.reload()
    await employee.page.getByRole('heading', { level: 2, name: 'Ordner' }).waitFor()
    await employee.page.getByText('Neuigkeiten').waitFor()
    assert.equal(await employee.page.getByText('Formulare', { exact: true }).count(), 0)
    assert.equal(await employee.page.getByText('Urlaubsanträge').count(), 0)
    await employee.context.close()
    await context.close()
  })

  test('a webhook’s failed delivery is redelivered from its log', async () => {
    let answer = 410
    const received: string[] = []
    const receiver = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        received.push(`${req.method} ${answer}`)
        res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer === 200 ? 'thanks' : 'gone')
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
    const { context, page } = await session({ user: 'admin' })
    await page.getByRole('link', { name: 'Automations' }).click()
    await page.getByRole('heading', { level: 1, name: 'Automations' }).waitFor()
    // validation: a problem next to the URL field
    await page.getByLabel('Name').fill('Receiver')
    await page.getByLabel('Webhook URL').fill('ftp://example.com/x')
    await page.getByRole('button', { name: 'Validate' }).click()
    await page.waitForFunction(() => document.querySelector('[aria-invalid="true"]'))
    await page.getByLabel('Webhook URL').fill(url)
    await page.getByRole('button', { name: 'Validate' }).click()
    await page.getByText('The webhook is valid.').waitFor()
    await page.getByRole('button', { name: 'Create' }).click()
    await page.waitForURL(/\/app\/admin\/automations\/\d+$/)
    await page.getByRole('button', { name: 'Send test' }).click()
    const waitForStatus = async (status: string) => {
      for (let i = 0; i < 40; i++) {
        await page.getByRole('button', { name: 'Refresh' }).click()
        await page.waitForTimeout(250)
        if (
          (await page
            .locator('.delivery-status')
            .first()
            .textContent()
            .catch(() => '')) === status
        )
          return
      }
      throw new Error(`no ${status} delivery; receiver saw ${received.join(', ')}`)
    }
    await waitForStatus('failed')
    await page.locator('.delivery summary').first().click()
    await page
      .getByText(/Response: 410/)
      .first()
      .waitFor()
    answer = 200
    await page
      .getByRole('button', { name: /^Redeliver/ })
      .first()
      .click()
    await page.getByRole('status').filter({ hasText: 'Redelivery queued.' }).waitFor()
    await waitForStatus('succeeded')
    assert.deepEqual(received, ['POST 410', 'POST 200'])
    await context.close()
    receiver.close()
  })

  test('sends a notification to a department; shared items and the audit log are shown', async () => {
    const { context, page } = await session({ user: 'admin' })
    await page.getByRole('link', { name: 'Send notification' }).click()
    await page.getByLabel('Title').fill('Store meeting')
    await page.getByLabel('Link').fill('/inbox')
    await page.getByLabel('Departments').selectOption({ label: 'Store Berlin' })
    await page.getByRole('button', { name: 'Send', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'The notification was sent.' }).waitFor()
    const anna = await server.api<Array<{ data: { title: string } }>>(
      'anna',
      'GET',
      '/api/notifications?sort=-created_at&limit=5',
    )
    assert.ok(anna.some((n) => n.data.title === 'Store meeting'))

    await page.getByRole('link', { name: 'Shared items' }).click()
    await page.getByRole('heading', { level: 1, name: 'Shared items' }).waitFor()
    await page
      .getByRole('button', { name: /^Copy URL/ })
      .first()
      .waitFor()
    await page.getByRole('link', { name: 'Audit log' }).click()
    await page.getByLabel('Action').fill('folder')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.getByRole('cell', { name: 'folder.create' }).first().waitFor()
    await page.waitForFunction(() =>
      [...document.querySelectorAll('table.data tbody tr td:nth-child(2)')].every((td) =>
        td.textContent!.startsWith('folder'),
      ),
    )
    await context.close()
  })
})

describe('administrator, more', () => {
  test('searches, deactivates and logs out a user; deletes and restores a shared item; exports the audit log', async () => {
    const { context, page } = await session({ user: 'admin' })
    await page.getByRole('link', { name: 'Users' }).click()
    await page.getByRole('searchbox', { name: 'Search users' }).fill('deniz')
    await page.getByRole('button', { name: 'Search' }).click()
    await page.waitForFunction(() => document.querySelectorAll('table.data tbody tr').length === 1)
    await page.getByRole('link', { name: 'deniz' }).click()
    await page.getByRole('heading', { level: 1, name: 'Edit user deniz' }).waitFor()
    await page.getByRole('checkbox', { name: 'Active' }).uncheck()
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const deniz = await server.api<Array<{ active: boolean }>>('admin', 'GET', '/api/users?filter[username]=deniz')
    assert.equal(deniz[0].active, false)
    await page.getByRole('checkbox', { name: 'Active' }).check()
    await page.getByRole('button', { name: 'Save' }).click()
    // a profile picture (multipart through the same client)
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    )
    await page.getByLabel('Upload picture').setInputFiles({ name: 'deniz.png', mimeType: 'image/png', buffer: png })
    await page.getByRole('img', { name: 'Profile picture' }).waitFor()
    await page.getByRole('button', { name: 'Log out everywhere' }).click()
    await page.getByRole('status').filter({ hasText: 'The user was logged out.' }).waitFor()
    await page.goBack()
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor()

    await page.getByRole('link', { name: 'Shared items' }).click()
    await page.getByRole('heading', { level: 1, name: 'Shared items' }).waitFor()
    const deleteButton = page.getByRole('button', { name: /^Delete: / }).first()
    const label = (await deleteButton.getAttribute('aria-label'))!.replace('Delete: ', '')
    await deleteButton.click()
    // the deleted item stays listed, marked, with a Restore button
    await page.getByRole('button', { name: `Restore: ${label}` }).click()
    await page.getByRole('button', { name: `Delete: ${label}` }).waitFor()

    await page.getByRole('link', { name: 'Audit log' }).click()
    await page.getByRole('cell').first().waitFor()
    const download = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Export CSV' }).click()
    const file = await download
    assert.equal(file.suggestedFilename(), 'audit-log.csv')
    const csv = await new Response((await file.createReadStream()) as unknown as ReadableStream).text()
    assert.match(csv.split('\n')[0], /action/)
    assert.match(csv, /shared_item\.restore|shared_item\.delete/)
    await context.close()
  })
})

describe('data protection in the admin console', () => {
  /** The text of everything that describes a field (its hint and the problem next to it). */
  const description = (field: Locator) =>
    field.evaluate((el) =>
      (el.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .map((id) => document.getElementById(id)?.textContent ?? '')
        .join(' '),
    )

  test('sets a retention period, sees a refused one at its field, puts it back to the default and previews the sweep', async () => {
    const { context, page } = await session({ user: 'admin' })
    // the client sends a Request with a streamed body, which the DevTools protocol does not show: the page keeps it
    await page.addInitScript(() => {
      const send = window.fetch.bind(window)
      window.fetch = async (input, init) => {
        if (input instanceof Request && input.method === 'PUT')
          (window as unknown as { lastPut: string }).lastPut = await input.clone().text()
        return send(input, init)
      }
    })
    await page.reload()
    await page.getByRole('navigation', { name: 'Administration' }).getByRole('link', { name: 'Retention' }).click()
    await page.getByRole('heading', { level: 1, name: 'Retention' }).waitFor()
    const read = page.getByRole('spinbutton', { name: 'Read notifications', exact: true })
    const audit = page.getByRole('spinbutton', { name: 'Audit log entries', exact: true })
    // the documented defaults (docs/data-protection.md), the operator's maximum in the hint
    assert.equal(await read.inputValue(), '180')
    assert.equal(await page.getByRole('spinbutton', { name: 'Unread notifications', exact: true }).inputValue(), '365')
    assert.equal(await audit.inputValue(), '365')
    assert.match(await description(audit), /At most 365 days/)
    /** Clicks Save; the JSON body the page sent. */
    const saveSends = async () => {
      const put = page.waitForResponse(
        (r) => r.request().method() === 'PUT' && r.url().endsWith('/api/administration/retention'),
      )
      await page.getByRole('button', { name: 'Save' }).click()
      await put
      return page.evaluate(() => JSON.parse((window as unknown as { lastPut: string }).lastPut) as unknown)
    }
    const retention = () =>
      server.api<{ data: { periods: Record<string, number> } }>('admin', 'GET', '/api/administration/retention')
    // every class of the answer has its input, labelled from the catalogue (a class without a label shows its key)
    for (const key of Object.keys((await retention()).data.periods)) {
      const input = page.getByRole('spinbutton').and(page.locator(`[name="${key}"]`))
      assert.equal(await input.count(), 1, key)
      const label = await input.evaluate((el) => document.querySelector(`label[for="${el.id}"]`)?.textContent)
      assert.ok(label && label !== key, `${key} is labelled (${label})`)
    }
    const exportRecords = page.getByRole('spinbutton', { name: 'Data export records', exact: true })
    assert.match(await description(exportRecords), /archive itself is deleted 7 days after it was made/)
    // the sweep of this class erases people: the hint says so, and that it cannot be undone
    const accounts = page.getByRole('spinbutton', { name: 'Deactivated accounts', exact: true })
    assert.equal(await accounts.inputValue(), '365')
    assert.match(await description(accounts), /erased automatically.*cannot be undone/)

    await read.fill('30')
    // only the changed class is sent
    assert.deepEqual(await saveSends(), { notifications_read: 30 })
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await page.reload()
    await read.waitFor()
    assert.equal(await read.inputValue(), '30')
    assert.equal((await retention()).data.periods.notifications_read, 30)

    // beyond the operator's maximum: the problem is next to that field, nothing is stored
    await audit.fill('400')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('[name="audit_log"][aria-invalid="true"]').waitFor()
    assert.match(await description(audit), /must be at most 365 days/)
    assert.equal(await read.getAttribute('aria-invalid'), null)
    assert.equal((await retention()).data.periods.audit_log, 365)
    // 0 days: the schema's minimum, next to its field
    await audit.fill('365')
    await read.fill('0')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('[name="notifications_read"][aria-invalid="true"]').waitFor()
    assert.match(await description(read), /at least 1/)
    assert.equal(await audit.getAttribute('aria-invalid'), null)
    assert.equal((await retention()).data.periods.notifications_read, 30)
    await expectNoSeriousViolations(page, '/admin/retention with a problem at a field')

    // "Use default" sends null: the default again
    await page.getByRole('button', { name: 'Use default: Read notifications' }).click()
    assert.equal(await read.inputValue(), '180')
    assert.deepEqual(await saveSends(), { notifications_read: null })
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    assert.equal((await retention()).data.periods.notifications_read, 180)

    // the preview is a dry run (never the real sweep): a count per class, the same the API gives
    const sweep = page.waitForRequest((r) => r.url().includes('/api/administration/retention/sweep'))
    await page.getByRole('button', { name: 'Preview sweep' }).click()
    assert.match((await sweep).url(), /[?&]dry_run=true(&|$)/)
    const preview = page.getByRole('table', { name: 'Would be deleted now' })
    await preview.waitFor()
    const dryRun = await server.api<{ data: { removed: Record<string, number> } }>(
      'admin',
      'POST',
      '/api/administration/retention/sweep?dry_run=true',
    )
    const shown = await preview
      .getByRole('row')
      .evaluateAll((rows) =>
        rows.slice(1).map((r) => [r.querySelector('th')!.textContent, r.querySelector('td')!.textContent]),
      )
    assert.equal(shown.length, Object.keys(dryRun.data.removed).length)
    assert.deepEqual(
      shown.find(([label]) => label === 'Read notifications'),
      ['Read notifications', String(dryRun.data.removed.notifications_read)],
    )
    assert.deepEqual(
      shown.find(([label]) => label === 'Audit log entries'),
      ['Audit log entries', String(dryRun.data.removed.audit_log)],
    )
    await expectNoSeriousViolations(page, '/admin/retention with the sweep preview')
    await context.close()
  })

  test("exports a user's personal data from the edit page, follows it to Data exports until ready, downloads the ZIP through a single-use link", async () => {
    const { context, page } = await session({ user: 'admin' })
    const ben = await userId('ben')
    await page.goto(`${server.base}/app/admin/users/${ben}`)
    await page.getByRole('heading', { level: 1, name: 'Edit user ben' }).waitFor()
    await page.getByRole('button', { name: 'Export personal data' }).click()
    await page.getByRole('status').filter({ hasText: 'The export was requested' }).waitFor()
    await page.getByRole('link', { name: 'Follow it under Data exports' }).click()
    await page.waitForURL(new RegExp(`/app/admin/data-exports\\?user=${ben}$`))
    await page.getByRole('heading', { level: 1, name: 'Data exports' }).waitFor()
    const admin = page.getByRole('navigation', { name: 'Administration' })
    assert.equal(await admin.getByRole('link', { name: 'Data exports' }).getAttribute('aria-current'), 'page')
    await page.getByText('Only the exports of Ben Miller.').waitFor()

    // newest first: the request just made, by the person's name; the worker in the server builds it
    const row = page.getByRole('table', { name: 'Data exports' }).getByRole('row').nth(1)
    assert.equal(await row.getByRole('rowheader').textContent(), 'Ben Miller')
    const status = row.getByRole('cell').first()
    const deadline = Date.now() + 30_000
    for (;;) {
      const shown = await status.textContent()
      if (shown === 'Ready') break
      assert.match(shown ?? '', /^Being prepared$/, 'the export is pending until it is ready')
      assert.ok(Date.now() < deadline, 'the export became ready within 30 s')
      await page.waitForTimeout(500)
      await page.getByRole('button', { name: 'Refresh' }).click()
      await settled(page)
    }
    assert.match((await row.getByRole('cell').nth(1).textContent()) ?? '', /^[\d.]+ (bytes|kB|MB)$/)
    assert.notEqual(await row.getByRole('cell').nth(4).textContent(), '—', 'the day it is deleted is shown')
    await expectNoSeriousViolations(page, '/admin/data-exports with a ready export')

    // Download: a single-use link (no token needed), the browser saves the ZIP
    const answer = page.waitForResponse((r) => r.url().includes('/api/data-exports/download/'))
    const download = page.waitForEvent('download')
    await row.getByRole('button', { name: /^Download: Ben Miller, requested / }).click()
    const [response, file] = await Promise.all([answer, download])
    assert.equal(response.status(), 200)
    assert.equal(response.headers()['content-type'], 'application/zip')
    assert.equal(file.suggestedFilename(), `personal-data-${ben}.zip`)
    const zip = await new Response((await file.createReadStream()) as unknown as ReadableStream).arrayBuffer()
    assert.equal(Buffer.from(zip).subarray(0, 4).toString('latin1'), 'PK\x03\x04', 'a ZIP archive')
    assert.ok(file.url().startsWith(`${server.base}/api/data-exports/download/`), file.url())
    // the same link a second time: gone
    assert.equal((await fetch(file.url())).status, 404)

    // another person's exports: none yet (the empty state), and the way back to all of them
    await page.goto(`${server.base}/app/admin/data-exports?user=${await userId('anna')}`)
    await page.getByText('No data exports of this person.').waitFor()
    await page.getByRole('link', { name: 'Show all data exports' }).click()
    await page.getByRole('table', { name: 'Data exports' }).getByRole('rowheader', { name: 'Ben Miller' }).waitFor()
    await context.close()
  })
})

describe('content that must be read', () => {
  test('an editor schedules a confirmation-required post; it appears for the employee when due; she confirms; the reach page shows it; the reminder reaches only those still pending', async () => {
    const editor = await session({ user: 'admin' })
    await editor.page.goto(`${server.base}/app/infoboard/write`)
    await editor.page.getByRole('heading', { level: 1, name: 'Write a post' }).waitFor()
    await editor.page.getByLabel('Title').fill('Cold room safety')
    await editor.page.getByLabel('Text').fill('<p>Close the <strong>cold room</strong> door.</p>')
    await editor.page.getByLabel('Channel').selectOption({ label: 'News' })
    await editor.page.getByRole('radio', { name: 'Schedule' }).check()
    // 15 seconds from now, in the browser's local time (a datetime-local input)
    const at = await editor.page.evaluate(() => {
      const d = new Date(Date.now() + 15_000)
      return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19)
    })
    await editor.page.getByLabel('Publish at').fill(at)
    await editor.page.getByRole('checkbox', { name: 'Readers must confirm that they have read it' }).check()
    await editor.page.getByRole('button', { name: 'Schedule post' }).click()
    await editor.page.waitForURL(/\/app\/infoboard\/posts\/\d+$/)
    const id = Number(/posts\/(\d+)$/.exec(editor.page.url())![1])

    // the employee: nothing before the time, then it is in her "to confirm" list
    const ben = await session({ user: 'ben' })
    await ben.page.goto(`${server.base}/app/infoboard`)
    const toConfirm = ben.page.getByRole('list', { name: 'To confirm' })
    await ben.page.getByRole('heading', { level: 2, name: 'To confirm' }).waitFor()
    await settled(ben.page)
    assert.equal(await ben.page.getByRole('link', { name: 'Cold room safety' }).count(), 0)
    const due = Date.now() + 40_000
    for (;;) {
      await ben.page.goto(`${server.base}/app/infoboard`)
      await settled(ben.page)
      if ((await toConfirm.getByRole('link', { name: 'Cold room safety' }).count()) > 0) break
      assert.ok(Date.now() < due, 'the scheduled post appeared for the employee')
      await new Promise((r) => setTimeout(r, 1000))
    }
    await toConfirm.getByRole('link', { name: 'Cold room safety' }).click()
    await ben.page.getByRole('heading', { level: 1, name: 'Cold room safety' }).waitFor()
    await ben.page.getByRole('button', { name: 'Confirm that I have read this' }).click()
    await ben.page.getByText(/You confirmed that you read this on/).waitFor()
    assert.equal(await ben.page.getByRole('button', { name: 'Confirm that I have read this' }).count(), 0)

    // the editor's reach page shows the confirmation; "Remind pending" reminds the others only
    await editor.page.goto(`${server.base}/app/infoboard/posts/${id}/reach`)
    await editor.page.getByRole('heading', { level: 1, name: 'Reach: Cold room safety' }).waitFor()
    await editor.page.getByText(/^Confirmed: 1 of \d+/).waitFor()
    await editor.page.getByRole('button', { name: 'Remind pending' }).click()
    await editor.page
      .getByRole('status')
      .filter({ hasText: /Reminder sent to \d+ people/ })
      .waitFor()
    const reminders = (user: string) =>
      server.api<Array<{ targetable_id: number }>>(
        user,
        'GET',
        '/api/notifications?filter[type]=infoboardPostReadingConfirmationReminder&limit=50',
      )
    const until = Date.now() + 15_000
    while ((await reminders('chloe')).filter((n) => n.targetable_id === id).length === 0) {
      assert.ok(Date.now() < until, 'the pending employee got the reminder')
      await new Promise((r) => setTimeout(r, 250))
    }
    assert.equal((await reminders('ben')).filter((n) => n.targetable_id === id).length, 0)
    await expectNoSeriousViolations(editor.page, 'reach page')
    await editor.context.close()
    await ben.context.close()
  })
})

describe('offline', () => {
  /** The records the app saved in IndexedDB (`answers`) for offline reading. */
  const savedAnswers = (page: Page) =>
    page.evaluate(
      () =>
        new Promise<number>((resolve, reject) => {
          const open = indexedDB.open('workplace-offline')
          open.onerror = () => reject(open.error)
          open.onsuccess = () => {
            const count = open.result.transaction('answers').objectStore('answers').count()
            count.onsuccess = () => resolve(count.result)
            count.onerror = () => reject(count.error)
          }
        }),
    )

  test('without a network the inbox, content and a post stay readable; a confirmation made offline is sent when the network is back; sign-out removes what was saved', async () => {
    // a post that asks for a reading confirmation, published now, in the News channel
    const channels = await server.api<Array<{ id: number; name: string }>>(
      'admin',
      'GET',
      '/api/folders?filter[type]=infoboardChannel',
    )
    const news = channels.find((c) => c.name === 'News') ?? channels[0]
    const post = await server.api<{ id: number }>('admin', 'POST', '/api/infoboard/posts', {
      channel_id: news.id,
      title: 'Fire exit drill',
      body: '<p>Meet at the car park when the alarm sounds.</p>',
      requires_reading_confirmation: true,
    })
    await sendTo('deniz', 'Offline reading check')
    const confirmedAt = async () =>
      (
        await server.api<{ my_state?: { confirmed_at: string | null } }>(
          'deniz',
          'GET',
          `/api/infoboard/posts/${post.id}`,
        )
      ).my_state?.confirmed_at ?? null

    const readAt = async () =>
      (
        await server.api<Array<{ read_at: string | null; data?: { title?: string } }>>(
          'deniz',
          'GET',
          '/api/notifications?sort=-created_at&limit=50',
        )
      ).find((n) => n.data?.title === 'Offline reading check')?.read_at ?? null

    // online: the inbox, the content page and the post are read once (and so saved on this device)
    const { context, page } = await session({ user: 'deniz' })

    await page.getByRole('link', { name: /Offline reading check/ }).waitFor()
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 10_000 })
    const menu = page.getByRole('navigation', { name: 'Hauptmenü' })
    await menu.getByRole('link', { name: 'Ordner und Inhalte' }).click()
    await page.getByRole('link', { name: 'Fire exit drill' }).waitFor()
    await settled(page)
    await menu.getByRole('link', { name: /^Infoboard/ }).click()
    await page.getByRole('heading', { level: 2, name: 'Beiträge' }).waitFor()
    await settled(page)
    // in "to confirm" and in the feed
    assert.equal(await page.getByRole('link', { name: 'Fire exit drill' }).count(), 2)
    await page.getByRole('link', { name: 'Fire exit drill' }).first().click()
    await page.getByRole('heading', { level: 1, name: 'Fire exit drill' }).waitFor()
    await page.getByRole('button', { name: 'Ich bestätige, dass ich dies gelesen habe' }).waitFor()
    const offlineNote = page.getByRole('status').filter({ hasText: 'Sie sind offline' })
    assert.equal(await offlineNote.count(), 0, 'no offline note while online')

    // offline: a reload starts the app from the service worker's cache and shows the saved post
    await context.setOffline(true)
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Fire exit drill' }).waitFor()
    await page.getByText('Meet at the car park when the alarm sounds.').waitFor()
    await offlineNote.waitFor()
    // the inbox and the content page, from what was saved; a notification marked read offline waits
    await menu.getByRole('link', { name: /^Posteingang/ }).click()
    await page.getByRole('link', { name: /Offline reading check/ }).waitFor()
    await page.getByRole('button', { name: 'Als gelesen markieren: Offline reading check' }).click()
    await page
      .getByRole('button', { name: 'Als gelesen markieren: Offline reading check' })
      .waitFor({ state: 'detached' })
    assert.equal(await readAt(), null, 'the mark did not reach the server while offline')
    await menu.getByRole('link', { name: 'Ordner und Inhalte' }).click()
    await page.getByRole('link', { name: 'Fire exit drill' }).click()
    await page.getByRole('heading', { level: 1, name: 'Fire exit drill' }).waitFor()

    // confirmed offline: shown as waiting, queued, not on the server yet
    await page.getByRole('button', { name: 'Ich bestätige, dass ich dies gelesen habe' }).click()
    await page.getByText(/wartet auf das Senden/).waitFor()
    await offlineNote.filter({ hasText: /Änderungen, die auf das Senden warten: \d+/ }).waitFor()
    assert.equal(await confirmedAt(), null, 'nothing reached the server while offline')
    // the infoboard (its feed asks for "published before now": the saved answer of that question) no
    // longer lists the post as to confirm
    await menu.getByRole('link', { name: /^Infoboard/ }).click()
    await page.getByRole('heading', { level: 2, name: 'Beiträge' }).waitFor()
    await settled(page)
    assert.equal(await page.getByRole('link', { name: 'Fire exit drill' }).count(), 1)
    await page.getByRole('link', { name: 'Fire exit drill' }).click()
    await page.getByText(/wartet auf das Senden/).waitFor()

    // back online: the queue is sent; the page shows the server's answer
    await context.setOffline(false)
    await page.getByText(/Du hast am .* bestätigt/).waitFor({ timeout: 10_000 })
    assert.ok(await confirmedAt(), 'the confirmation made offline reached the server')
    assert.ok(await readAt(), 'the mark as read made offline reached the server')
    assert.equal(await offlineNote.count(), 0)
    await expectNoSeriousViolations(page, 'post after an offline confirmation')

    // sign-out removes this user's saved answers
    assert.ok((await savedAnswers(page)) > 0, 'answers were saved for offline reading')
    await page.getByRole('button', { name: 'Abmelden' }).click()
    await page.waitForURL(/\/app\/sign-in/)
    assert.equal(await savedAnswers(page), 0, 'sign-out removed the saved answers')
    await context.close()
  })
})

describe('accessibility', () => {
  test('axe-core reports no serious or critical violation on any page (desktop)', async () => {
    const context = await newContext(browser)
    const page = await context.newPage()
    await page.goto(`${server.base}/app/sign-in`)
    await page.getByRole('heading', { level: 1 }).waitFor()
    await expectNoSeriousViolations(page, '/sign-in')
    await signIn(page, server.base, 'admin', server.password)
    const folders = await server.api<Array<{ id: number }>>('admin', 'GET', '/api/folders?sort=id&limit=1')
    const automations = await server.api<Array<{ id: number }>>('admin', 'GET', '/api/administration/automations')
    const users = await server.api<Array<{ id: number }>>('admin', 'GET', '/api/users?filter[username]=ben')
    const posts = await server.api<Array<{ id: number }>>('admin', 'GET', '/api/infoboard/posts?limit=1')
    const pages = [
      '/inbox',
      '/content',
      `/infoboard/posts/${posts[0].id}`,
      '/settings',
      '/admin/users',
      `/admin/users/${users[0].id}`,
      '/admin/users/new',
      '/admin/users/import',
      '/admin/roles',
      '/admin/folders',
      `/admin/folders/${folders[0].id}`,
      '/admin/shared-items',
      '/admin/automations',
      `/admin/automations/${automations[0].id}`,
      '/admin/audit',
      '/admin/send',
      '/admin/retention',
      '/admin/data-exports',
      '/infoboard',
      '/infoboard/write',
      `/infoboard/posts/${posts[0].id}/reach`,
    ]
    for (const path of pages) {
      await page.goto(`${server.base}/app${path}`)
      await page.getByRole('heading', { level: 1 }).waitFor()
      await settled(page)
      await expectNoSeriousViolations(page, path)
    }
    report.push(`axe-core: ${pages.length + 1} desktop pages and 4 phone pages without serious or critical violations`)
    await context.close()
  })
})

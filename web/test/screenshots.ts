/**
 * `npm run screenshots`: PNGs of each main page into docs/screenshots/ (desktop, and the employee
 * pages at phone width), from a fresh server with the demo tenant, in Debian's Chromium.
 */
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, ROOT, signIn, startServer } from './harness.js'

const OUT = path.join(ROOT, 'docs/screenshots')
fs.mkdirSync(OUT, { recursive: true })

const server = await startServer()
const browser = await launchBrowser()
const shots: string[] = []

async function shoot(page: Page, name: string, url: string, ready: () => Promise<unknown>) {
  await page.goto(server.base + '/app' + url)
  await ready()
  await page.waitForFunction(() => !document.querySelector('.loading, [aria-busy="true"]'), undefined, {
    timeout: 10_000,
  })
  await page.waitForTimeout(200)
  const file = path.join(OUT, `${name}.png`)
  await page.screenshot({ path: file, fullPage: false })
  shots.push(path.relative(ROOT, file))
}

try {
  // a webhook receiver that fails, for a delivery log with a failure in it
  const receiver = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(410).end('gone')))
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  const automation = await server.api<{ id: number }>('admin', 'POST', '/api/administration/automations', {
    name: 'Team chat',
    event: 'infoboardPost.created',
    active: true,
    actions: [
      {
        type: 'webhook',
        config: {
          url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`,
          method: 'POST',
          headers: {},
          auth: null,
        },
      },
    ],
  })
  await server.api('admin', 'POST', `/api/administration/automations/${automation.id}/test`)
  const folders = await server.api<Array<{ id: number; name: string }>>('admin', 'GET', '/api/folders?sort=id')

  const heading = (page: Page, name?: string) => () =>
    page.getByRole('heading', { level: 1, ...(name ? { name } : {}) }).waitFor()

  // employee, desktop (German: Anna's language) and phone
  for (const phone of [false, true]) {
    const context = await newContext(browser, { phone })
    const page = await context.newPage()
    const suffix = phone ? '-phone' : ''
    await shoot(page, `sign-in${suffix}`, '/sign-in', heading(page))
    await signIn(page, server.base, 'anna', server.password)
    await page.getByText('Live-Aktualisierung an').waitFor()
    await shoot(page, `inbox${suffix}`, '/inbox', () => page.getByText('Live-Aktualisierung an').waitFor())
    await shoot(page, `content${suffix}`, '/content', heading(page))
    await shoot(page, `settings${suffix}`, '/settings', heading(page))
    await context.close()
  }

  // administrator, desktop (English)
  const context = await newContext(browser)
  const page = await context.newPage()
  await signIn(page, server.base, 'admin', server.password)
  await shoot(page, 'admin-users', '/admin/users', heading(page))
  await page.goto(server.base + '/app/admin/users/import')
  await page.getByLabel('CSV file').setInputFiles({
    name: 'users.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from(
      'username,password,first_name,last_name,email\nerik,long-enough-password,Erik,Berg,not-an-email\n',
    ),
  })
  await page.getByRole('button', { name: 'Check file' }).click()
  await page.getByRole('table', { name: 'Rows with errors' }).waitFor()
  await page.screenshot({ path: path.join(OUT, 'admin-users-import.png') })
  shots.push('docs/screenshots/admin-users-import.png')
  await shoot(page, 'admin-roles', '/admin/roles', heading(page))
  const forms = folders.find((f) => f.name === 'Forms') ?? folders[0]
  await shoot(page, 'admin-folders', `/admin/folders/${forms.id}`, () =>
    page.getByRole('heading', { level: 2 }).first().waitFor(),
  )
  await shoot(page, 'admin-shared-items', '/admin/shared-items', heading(page))
  await page.waitForTimeout(1500)
  await shoot(page, 'admin-automations', `/admin/automations/${automation.id}`, () =>
    page.locator('.delivery').first().waitFor(),
  )
  await shoot(page, 'admin-audit', '/admin/audit', heading(page))
  await shoot(page, 'admin-send', '/admin/send', heading(page))
  await context.close()
  receiver.close()
  console.log(`wrote ${shots.length} screenshots:\n  ${shots.join('\n  ')}`)
} finally {
  await browser.close()
  await server.stop()
}

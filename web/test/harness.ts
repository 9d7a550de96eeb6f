/**
 * Browser tests' fixtures: a real `workplace serve` (from the sources, on a fresh embedded PostgreSQL
 * in a temporary DATA_DIR, the demo tenant created on first start) and Debian's Chromium driven by
 * playwright-core (Playwright's own browser download is not possible here).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (p): p is string => !!p,
  )
  const found = candidates.find((p) => fs.existsSync(p))
  if (!found) throw new Error('Chromium not found: apt-get install -y chromium (or set CHROMIUM_PATH)')
  return found
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS, headless: true })
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

export interface Server {
  base: string
  password: string
  process: ChildProcess
  stop(): Promise<void>
  /** An API call as a given demo user (the same HTTP API the app uses). */
  api<T = unknown>(user: string, method: string, url: string, body?: unknown): Promise<T>
}

export async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'workplace-browser-'))
  const port = await freePort()
  const inherited = { ...process.env }
  for (const key of ['DATABASE_URL', 'DATABASE_DIRECT_URL', 'TEST_DATABASE_URL', 'APP_URL', 'BASE_URL'])
    delete inherited[key]
  const child = spawn(process.execPath, ['bin/workplace.js', 'serve'], {
    cwd: ROOT,
    env: {
      ...inherited,
      WORKPLACE_FROM_SOURCE: '1',
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      // the single sign-on test's identity provider listens on 127.0.0.1
      OIDC_ALLOW_PRIVATE_NETWORKS: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 180_000
  let password: string | undefined
  for (;;) {
    password ??= /password: (\S+)/.exec(output)?.[1]
    if (password) {
      const ready = await fetch(`${base}/health/ready`).then(
        (r) => r.ok,
        () => false,
      )
      if (ready) break
    }
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}):\n${output}`)
    if (Date.now() > deadline) throw new Error(`server did not start:\n${output}`)
    await new Promise((r) => setTimeout(r, 250))
  }
  const tokens = new Map<string, string>()
  const token = async (user: string) => {
    if (!tokens.has(user)) {
      const r = await fetch(`${base}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tenant: 'demo', username: user, password }),
      })
      tokens.set(user, ((await r.json()) as { access_token: string }).access_token)
    }
    return tokens.get(user)!
  }
  return {
    base,
    password: password!,
    process: child,
    async api<T>(user: string, method: string, url: string, body?: unknown): Promise<T> {
      const send = async () =>
        fetch(base + url, {
          method,
          headers: {
            authorization: `Bearer ${await token(user)}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        })
      let r = await send()
      // an earlier test may have ended the user's sessions ("Log out everywhere"): sign in anew, once
      if (r.status === 401 && tokens.has(user)) {
        tokens.delete(user)
        r = await send()
      }
      const text = await r.text()
      if (!r.ok) throw new Error(`${method} ${url}: ${r.status} ${text}`)
      return (text ? JSON.parse(text) : undefined) as T
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await new Promise((r) => child.once('exit', r))
      }
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Signs in through the sign-in page, as a person would (by label and button name). */
export async function signIn(page: Page, base: string, username: string, password: string): Promise<void> {
  await page.goto(`${base}/app/sign-in`)
  await page.getByLabel(/^(Tenant|Mandant)$/).fill('demo')
  await page.getByLabel(/^(Username|Benutzername)$/).fill(username)
  await page.getByLabel(/^(Password|Passwort)$/).fill(password)
  await page.getByRole('button', { name: /^(Sign in|Anmelden)$/ }).click()
  await page.waitForURL(/\/app\/inbox/)
}

export async function newContext(
  browser: Browser,
  options: { phone?: boolean; locale?: string } = {},
): Promise<BrowserContext> {
  return browser.newContext({
    locale: options.locale ?? 'en-US',
    viewport: options.phone ? { width: 390, height: 844 } : { width: 1280, height: 860 },
    deviceScaleFactor: 1,
    isMobile: options.phone,
    hasTouch: options.phone,
  })
}

const AXE_SOURCE = fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: Array<{ target: string[] }>
}

/** axe-core in the page: the serious and critical violations (WCAG 2.x A and AA rules, best practices). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // evaluated through the DevTools protocol: the app's CSP (no inline script) stays on
  await page.evaluate(AXE_SOURCE)
  const results = await page.evaluate(async () => {
    const axe = (
      window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: AxeViolation[] }> } }
    ).axe
    return axe.run(document, { resultTypes: ['violations'] })
  })
  return results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
}

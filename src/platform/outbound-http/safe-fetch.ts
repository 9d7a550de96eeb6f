import dns from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { Agent, buildConnector, request } from 'undici'
import { BlockedAddressError, isBlockedAddress, unbracket } from './address-guard.js'

export { BlockedAddressError, isBlockedAddress, unbracket } from './address-guard.js'

export interface ResolvedAddress {
  address: string
  family: number
}
/** Resolves a host name to every address (A and AAAA). Tests inject a fake one (rebinding, mixed answers). */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>

export const resolveWithSystemDns: ResolveHost = (hostname) =>
  dns.promises.lookup(hostname, { all: true, verbatim: true })

export interface SafeHttpOptions {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: skips the address check (tests, on-premises targets). */
  allowPrivateNetworks: boolean
  /** Budget for the whole exchange: connect, headers and the (capped) body read. */
  timeoutMs: number
  /** Response bytes kept; the rest is not read (the connection is dropped). */
  maxResponseBytes: number
  resolve?: ResolveHost
  /** Parallel connections per origin kept by the agent. */
  connectionsPerOrigin?: number
}

export interface OutboundRequest {
  method: string
  headers: Record<string, string>
  body?: Buffer
}

export type OutboundErrorKind =
  'timeout' | 'blocked_address' | 'dns_failure' | 'connection_failed' | 'tls_failure' | 'request_failed'

export type OutboundResult =
  | {
      kind: 'response'
      status: number
      headers: Record<string, string | string[] | undefined>
      body: Buffer
      truncated: boolean
      timeMs: number
    }
  | { kind: 'error'; error: OutboundErrorKind; message: string; timeMs: number }

/**
 * A `net.connect` lookup that resolves every address of the host and refuses the connection when
 * any of them is blocked (fail closed on mixed answers), so the check applies to the address really
 * connected to — after DNS, on every new connection (DNS rebinding cannot slip past a config check).
 */
function guardedLookup(resolve: ResolveHost, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const host = unbracket(hostname)
    const answer = isIP(host) ? Promise.resolve([{ address: host, family: isIP(host) }]) : resolve(host)
    answer
      .then((addresses) => {
        const wanted = addresses.filter((a) => !options.family || a.family === options.family)
        if (wanted.length === 0) throw Object.assign(new Error(`${host} does not resolve`), { code: 'ENOTFOUND' })
        const bad = allowPrivate ? undefined : addresses.find((a) => isBlockedAddress(a.address))
        if (bad) throw new BlockedAddressError(host, bad.address)
        if (options.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, wanted)
        else callback(null, wanted[0].address, wanted[0].family)
      })
      .catch((error: NodeJS.ErrnoException) => callback(error, '', 0))
  }
}

function causeOf(error: { cause?: unknown }): { code?: string; name?: string; cause?: unknown } | undefined {
  return typeof error.cause === 'object' && error.cause !== null ? error.cause : undefined
}

function findCause(error: unknown, test: (e: { code?: string; name?: string }) => boolean): boolean {
  for (
    let e = error as { code?: string; name?: string; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = causeOf(e), depth++
  ) {
    if (test(e)) return true
  }
  return false
}

function classify(error: unknown, timedOut: boolean): OutboundErrorKind {
  if (findCause(error, (e) => e.code === 'ERR_BLOCKED_ADDRESS')) return 'blocked_address'
  if (timedOut || findCause(error, (e) => e.name === 'TimeoutError' || /TIMEOUT/.test(e.code ?? ''))) return 'timeout'
  if (findCause(error, (e) => e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' || e.code === 'EAI_NONAME'))
    return 'dns_failure'
  if (findCause(error, (e) => /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(e.code ?? '')))
    return 'tls_failure'
  if (findCause(error, (e) => /^(ECONN|EHOST|ENET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)/.test(e.code ?? '')))
    return 'connection_failed'
  return 'request_failed'
}

/**
 * Outbound HTTP for user-configured targets (webhooks): SSRF guard at connect time, no redirects
 * followed (undici's dispatcher follows none without the redirect interceptor), one deadline for
 * the whole exchange, capped response body. Expected network failures are returned as data.
 */
export class SafeHttpClient {
  private readonly agent: Agent

  constructor(private readonly options: SafeHttpOptions) {
    const allowPrivate = options.allowPrivateNetworks
    const base = buildConnector({
      lookup: guardedLookup(options.resolve ?? resolveWithSystemDns, allowPrivate),
      timeout: options.timeoutMs,
    })
    // Node skips `lookup` for IP literals, so literals are checked here, before any socket exists.
    const connect: buildConnector.connector = (opts, callback) => {
      const host = unbracket(opts.hostname)
      if (!allowPrivate && isIP(host) && isBlockedAddress(host))
        return callback(new BlockedAddressError(host, host), null)
      return base(opts, callback)
    }
    this.agent = new Agent({ connect, connections: options.connectionsPerOrigin ?? 16, keepAliveTimeout: 4_000 })
  }

  /** Sends one request; never follows redirects; returns the response (body capped) or the failure kind. */
  async send(url: string, outbound: OutboundRequest): Promise<OutboundResult> {
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    const signal = AbortSignal.timeout(this.options.timeoutMs)
    try {
      const response = await request(url, {
        dispatcher: this.agent,
        method: outbound.method,
        headers: outbound.headers,
        body: outbound.body,
        signal,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      })
      const chunks: Buffer[] = []
      let size = 0
      let truncated = false
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        const room = this.options.maxResponseBytes - size
        chunks.push(chunk.subarray(0, Math.max(0, room)))
        size += Math.min(chunk.length, Math.max(0, room))
        if (chunk.length >= room) {
          truncated = chunk.length > room
          break // leaving the loop destroys the stream: the rest is never downloaded
        }
      }
      if (truncated) response.body.destroy()
      return {
        kind: 'response',
        status: response.statusCode,
        headers: response.headers,
        body: Buffer.concat(chunks),
        truncated,
        timeMs: elapsed(),
      }
    } catch (error) {
      const kind = classify(error, signal.aborted)
      return { kind: 'error', error: kind, message: (error as Error).message ?? String(error), timeMs: elapsed() }
    }
  }

  async close(): Promise<void> {
    await this.agent.close()
  }
}

import { BlockList, isIP } from 'node:net'

/**
 * Addresses a webhook may never reach unless private networks are allowed (SSRF guard): loopback,
 * RFC 1918 / ULA, link-local (incl. cloud metadata 169.254.169.254), CGNAT, multicast, unspecified,
 * documentation, benchmarking and other reserved ranges (IANA special-purpose registries).
 */
const blocked = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible block
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(network, prefix, 'ipv6')

/** Expands an IPv6 text form to its eight 16-bit groups (handles `::` and a dotted IPv4 tail). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().split('%')[0]
  const dotted = text.match(/(\d+\.\d+\.\d+\.\d+)$/)
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number)
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const fill = tail === undefined ? [] : new Array(8 - left.length - right.length).fill('0')
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16))
}

/** The IPv4 address embedded in an IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) or 6to4 address. */
function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address)
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6], g[7])
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6], g[7])
  if (g[0] === 0x2002) return v4(g[1], g[2])
  return undefined
}

/** Strips the brackets `new URL()` keeps around IPv6 hosts. */
export const unbracket = (host: string) => host.replace(/^\[(.*)\]$/, '$1')

/** True when `address` (an IP literal) is loopback, private, link-local, CGNAT, multicast, unspecified or reserved. */
export function isBlockedAddress(address: string): boolean {
  const ip = unbracket(address)
  const family = isIP(ip)
  if (family === 4) return blocked.check(ip, 'ipv4')
  if (family !== 6) return true // not an address at all: fail closed
  const v4 = embeddedIpv4(ip)
  if (v4 !== undefined && blocked.check(v4, 'ipv4')) return true
  return blocked.check(ip, 'ipv6')
}

/** A connection refused by the SSRF guard; permanent (retrying cannot help). */
export class BlockedAddressError extends Error {
  readonly code = 'ERR_BLOCKED_ADDRESS'
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`Refusing to connect to ${host} (${address}): private, loopback or reserved address`)
    this.name = 'BlockedAddressError'
  }
}

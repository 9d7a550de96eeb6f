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

/**
 * The IPv4 addresses an IPv6 address embeds, by which it is judged (issue 33): IPv4-mapped
 * (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`, RFC 2765), NAT64 well-known (`64:ff9b::/96`)
 * and local-use (`64:ff9b:1::/48`, RFC 8215: RFC 6052's /48 layout, octets in groups 3–4 around the
 * reserved u octet), 6to4 (`2002::/16`, RFC 3056) and Teredo (`2001::/32`, RFC 4380: the server, and
 * the client with its bits inverted). A gateway for any of them forwards to the embedded address.
 */
function embeddedIpv4(address: string): string[] {
  const g = ipv6Groups(address)
  const v4 = (hi: number, lo: number) => `${(hi >> 8) & 255}.${hi & 255}.${(lo >> 8) & 255}.${lo & 255}`
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 5) && g[5] === 0xffff) return [v4(g[6], g[7])]
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return [v4(g[6], g[7])]
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return [v4(g[6], g[7])]
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return [v4(g[3], ((g[4] & 0xff) << 8) | (g[5] >> 8))]
  if (g[0] === 0x2002) return [v4(g[1], g[2])]
  if (g[0] === 0x2001 && g[1] === 0) return [v4(g[2], g[3]), v4(~g[6] & 0xffff, ~g[7] & 0xffff)]
  return []
}

/** Strips the brackets `new URL()` keeps around IPv6 hosts. */
export const unbracket = (host: string) => host.replace(/^\[(.*)\]$/, '$1')

/** True when `address` (an IP literal) is loopback, private, link-local, CGNAT, multicast, unspecified or reserved. */
export function isBlockedAddress(address: string): boolean {
  const ip = unbracket(address)
  const family = isIP(ip)
  if (family === 4) return blocked.check(ip, 'ipv4')
  if (family !== 6) return true // not an address at all: fail closed
  if (embeddedIpv4(ip).some((v4) => blocked.check(v4, 'ipv4'))) return true
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

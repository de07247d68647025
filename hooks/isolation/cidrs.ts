/**
 * The value of the Setting `instance-isolation-pod-cidrs`: the cluster's pod CIDRs.
 *
 * The rule is the one the Setting CRD's CEL rule enforces (hooks/api/setting.ts), so that the hook
 * never accepts what the API server would refuse and never refuses what it accepted:
 *
 * - the value is blank when `trim()` leaves nothing; CEL's `trim()` is Go's `strings.TrimSpace`
 *   (Unicode White_Space plus U+0085), so this module trims the same characters rather than
 *   JavaScript's set (which also strips U+FEFF and keeps U+0085);
 * - otherwise every comma-separated entry, trimmed, must parse as `netip.ParsePrefix` parses it
 *   (no zone, no leading zeros in an IPv4 octet or in the prefix length), must not be an
 *   IPv4-mapped IPv6 address (CEL's `cidr()` refuses those), must have a prefix length above 0,
 *   and must be written exactly as `string(cidr(c).masked())` prints it: host bits zero, IPv6 in
 *   the RFC 5952 form Go prints (lower-case hex, no leading zeros in a group, the longest run of
 *   two or more zero groups, the first one on a tie, written `::`).
 *
 * Canonical text matters beyond validation: the CIDRs are copied into the NetworkPolicy's
 * `ipBlock.except`, which the API server stores verbatim (it warns on non-canonical IPv6 there);
 * canonical, sorted, de-duplicated text makes the rendered policy byte-for-byte stable.
 *
 * Chosen where the spec is silent: exact duplicates collapse into one entry; overlapping but
 * different CIDRs (10.0.0.0/8 and 10.1.0.0/16) are both kept, as written, because either form is
 * valid in `except` and dropping one would hide what the admin wrote.
 */

import { goTrimSpace } from '../k8s/go-strings.ts'

/** The pod CIDRs of one Setting value, per address family, canonical and sorted. */
export interface PodCidrs {
  /** IPv4 CIDRs, sorted by address then prefix length. */
  ipv4: string[]
  /** IPv6 CIDRs, sorted by address then prefix length. */
  ipv6: string[]
}

/**
 * What a Setting value means for isolation: `off` (absent or blank), `on` with the CIDRs, or
 * `invalid` with one message per bad entry, each naming the entry and the rule it breaks.
 */
export type PodCidrSetting = { state: 'off' } | { state: 'on'; cidrs: PodCidrs } | { state: 'invalid'; errors: string[] }

/**
 * Reads the value of `instance-isolation-pod-cidrs` (undefined when the Setting is absent).
 * Collects every bad entry rather than stopping at the first.
 */
export function parsePodCidrs(value: string | undefined): PodCidrSetting {
  if (value === undefined || goTrimSpace(value) === '') return { state: 'off' }
  const errors: string[] = []
  const byText = new Map<string, Prefix>()
  value.split(',').forEach((raw, index) => {
    const entry = goTrimSpace(raw)
    const parsed = checkEntry(entry)
    if (typeof parsed === 'string') errors.push(`entry ${index + 1} ${JSON.stringify(entry)} ${parsed}`)
    else byText.set(entry, parsed)
  })
  if (errors.length > 0) return { state: 'invalid', errors }
  const sorted = [...byText.values()].sort(comparePrefixes)
  return {
    state: 'on',
    cidrs: {
      ipv4: sorted.filter((p) => p.family === 4).map(formatPrefix),
      ipv6: sorted.filter((p) => p.family === 6).map(formatPrefix)
    }
  }
}

/** An IP prefix as numbers: the address as an unsigned integer of 32 or 128 bits. */
interface Prefix {
  family: 4 | 6
  address: bigint
  bits: number
}

const EXAMPLE = '(like 10.244.0.0/16 or fd00:10:244::/56)'

/** The entry's prefix, or the rule it breaks as a phrase that follows the quoted entry. */
function checkEntry(entry: string): Prefix | string {
  if (entry === '') return `is empty; remove the extra comma`
  const prefix = parsePrefix(entry)
  if (prefix === undefined) return `is not an IPv4 or IPv6 CIDR ${EXAMPLE}`
  if (prefix.family === 6 && isIPv4Mapped(prefix.address)) {
    return 'is an IPv4-mapped IPv6 address, which is not allowed; write the IPv4 CIDR instead'
  }
  if (prefix.bits === 0) return 'has prefix length 0, which would cover every address; use a prefix length above 0'
  const masked = { ...prefix, address: prefix.address & networkMask(prefix.family, prefix.bits) }
  const canonical = formatPrefix(masked)
  if (masked.address !== prefix.address) return `has bits set beyond the prefix length; write ${canonical}`
  if (canonical !== entry) return `is not in canonical form; write ${canonical}`
  return prefix
}

function parsePrefix(text: string): Prefix | undefined {
  const slash = text.lastIndexOf('/')
  if (slash < 0) return undefined
  const addressText = text.slice(0, slash)
  const bitsText = text.slice(slash + 1)
  // Go's netip.ParsePrefix: decimal digits only, no leading zero unless the length is 0 itself.
  if (!/^(0|[1-9][0-9]{0,2})$/.test(bitsText)) return undefined
  const bits = Number(bitsText)
  if (addressText.includes(':')) {
    const address = parseIPv6(addressText)
    return address === undefined || bits > 128 ? undefined : { family: 6, address, bits }
  }
  const address = parseIPv4(addressText)
  return address === undefined || bits > 32 ? undefined : { family: 4, address, bits }
}

/** Dotted quad as Go's netip parses it: four decimal octets, no leading zeros. */
function parseIPv4(text: string): bigint | undefined {
  const octets = text.split('.')
  if (octets.length !== 4) return undefined
  let value = 0n
  for (const octet of octets) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(octet) || Number(octet) > 255) return undefined
    value = (value << 8n) | BigInt(octet)
  }
  return value
}

/** IPv6 text with at most one `::` and an optional trailing dotted quad; no zone. */
function parseIPv6(text: string): bigint | undefined {
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  // A dotted quad may only end the address, as in Go's parser.
  const head = groupsOf(halves[0] ?? '', halves.length === 1)
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '', true) : []
  if (head === undefined || tail === undefined) return undefined
  const written = head.length + tail.length
  if (halves.length === 2 ? written > 7 : written !== 8) return undefined
  const groups = [...head, ...new Array<number>(8 - written).fill(0), ...tail]
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n)
}

/** The 16-bit groups of one side of `::`; a trailing dotted quad counts as two groups. */
function groupsOf(side: string, mayEndInIPv4: boolean): number[] | undefined {
  if (side === '') return []
  const parts = side.split(':')
  const groups: number[] = []
  for (const [i, part] of parts.entries()) {
    if (mayEndInIPv4 && i === parts.length - 1 && part.includes('.')) {
      const v4 = parseIPv4(part)
      if (v4 === undefined) return undefined
      groups.push(Number(v4 >> 16n), Number(v4 & 0xffffn))
    } else {
      if (!/^[0-9a-fA-F]{1,4}$/.test(part)) return undefined
      groups.push(parseInt(part, 16))
    }
  }
  return groups
}

function isIPv4Mapped(address: bigint): boolean {
  return address >> 32n === 0xffffn
}

function networkMask(family: 4 | 6, bits: number): bigint {
  const width = family === 4 ? 32n : 128n
  const all = (1n << width) - 1n
  return (all >> BigInt(bits)) ^ all
}

function formatPrefix(prefix: Prefix): string {
  return `${prefix.family === 4 ? formatIPv4(prefix.address) : formatIPv6(prefix.address)}/${prefix.bits}`
}

function formatIPv4(address: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((address >> shift) & 0xffn)).join('.')
}

/** IPv6 text as Go's netip.Addr.String prints it (RFC 5952). */
function formatIPv6(address: bigint): string {
  if (isIPv4Mapped(address)) return `::ffff:${formatIPv4(address & 0xffffffffn)}`
  const groups = Array.from({ length: 8 }, (_, i) => Number((address >> BigInt(112 - 16 * i)) & 0xffffn))
  let runStart = -1
  let runLength = 0
  for (let i = 0; i < 8; i++) {
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i >= 2 && j - i > runLength) {
      runStart = i
      runLength = j - i
    }
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':')
  if (runStart < 0) return hex(0, 8)
  return `${hex(0, runStart)}::${hex(runStart + runLength, 8)}`
}

function comparePrefixes(a: Prefix, b: Prefix): number {
  if (a.family !== b.family) return a.family - b.family
  if (a.address !== b.address) return a.address < b.address ? -1 : 1
  return a.bits - b.bits
}

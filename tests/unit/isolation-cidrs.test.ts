import t from 'tap'
import { parsePodCidrs } from '../../hooks/isolation/cidrs.ts'

/** Values that turn isolation off. */
const off: Array<{ name: string; given: string | undefined }> = [
  { name: 'an absent setting turns isolation off', given: undefined },
  { name: 'a blank setting turns isolation off', given: '' },
  { name: 'a setting of only whitespace turns isolation off', given: ' \t\n\u00a0\u0085\u3000' }
]
for (const c of off) {
  t.test(c.name, async (t) => {
    t.same(parsePodCidrs(c.given), { state: 'off' })
  })
}

/** Values that parse: the CIDRs each family gets, in order. */
const accepted: Array<{ name: string; given: string; ipv4: string[]; ipv6: string[] }> = [
  { name: 'one IPv4 CIDR', given: '10.244.0.0/16', ipv4: ['10.244.0.0/16'], ipv6: [] },
  { name: 'one IPv6 CIDR', given: 'fd00:10:244::/56', ipv4: [], ipv6: ['fd00:10:244::/56'] },
  {
    name: 'entries are trimmed and split by family',
    given: ' fd00:10:244::/56 ,\t10.244.0.0/16 ',
    ipv4: ['10.244.0.0/16'],
    ipv6: ['fd00:10:244::/56']
  },
  {
    name: 'CIDRs are sorted numerically by address, not as text',
    given: '10.244.0.0/16,9.0.0.0/8,10.3.0.0/16,192.168.0.0/16',
    ipv4: ['9.0.0.0/8', '10.3.0.0/16', '10.244.0.0/16', '192.168.0.0/16'],
    ipv6: []
  },
  { name: 'the same address sorts by prefix length', given: '10.0.0.0/16,10.0.0.0/8', ipv4: ['10.0.0.0/8', '10.0.0.0/16'], ipv6: [] },
  {
    name: 'IPv6 CIDRs are sorted numerically by address',
    given: 'fd00:10:244::/56,fd00:9::/32,2001:db8::/32',
    ipv4: [],
    ipv6: ['2001:db8::/32', 'fd00:9::/32', 'fd00:10:244::/56']
  },
  { name: 'duplicates collapse', given: '10.244.0.0/16, 10.244.0.0/16,fd00::/8,fd00::/8', ipv4: ['10.244.0.0/16'], ipv6: ['fd00::/8'] },
  { name: 'overlapping but different CIDRs are both kept', given: '10.0.0.0/8,10.1.0.0/16', ipv4: ['10.0.0.0/8', '10.1.0.0/16'], ipv6: [] },
  { name: 'a longer later zero run wins over an earlier one', given: '2001:0:0:1::1/128', ipv4: [], ipv6: ['2001:0:0:1::1/128'] },
  { name: 'a single zero group written out is canonical', given: '2001:db8:0:1:1:1:1:1/128', ipv4: [], ipv6: ['2001:db8:0:1:1:1:1:1/128'] }
]
for (const c of accepted) {
  t.test(c.name, async (t) => {
    t.same(parsePodCidrs(c.given), { state: 'on', cidrs: { ipv4: c.ipv4, ipv6: c.ipv6 } })
  })
}

/** What the error says of an entry that is no CIDR at all. */
const NOT_A_CIDR = 'is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)'
/** What the error says of a CIDR written in another form than `canonical`. */
const notCanonical = (canonical: string): string => `is not in canonical form; write ${canonical}`
/** What the error says of a CIDR with host bits set, whose masked form is `masked`. */
const hostBitsSet = (masked: string): string => `has bits set beyond the prefix length; write ${masked}`

/** Values of one bad entry: the one error names it as entry 1 and says `why`. */
const refused: Array<{ name: string; given: string; why: string }> = [
  { name: 'a zero-width no-break space is not whitespace to CEL, so it is an invalid entry', given: '\ufeff', why: NOT_A_CIDR },
  { name: 'host bits set is refused with the masked form to write', given: '10.244.0.1/16', why: hostBitsSet('10.244.0.0/16') },
  { name: 'IPv6 host bits set is refused with the masked form to write', given: 'fd00:10:244::1/56', why: hostBitsSet('fd00:10:244::/56') },
  { name: 'upper-case IPv6 is not canonical', given: 'FD00:10:244::/56', why: notCanonical('fd00:10:244::/56') },
  { name: 'uncompressed zero groups are not canonical', given: 'fd00:10:244:0:0:0:0:0/56', why: notCanonical('fd00:10:244::/56') },
  { name: 'leading zeros in an IPv6 group are not canonical', given: 'fd00:0010:244::/56', why: notCanonical('fd00:10:244::/56') },
  { name: 'the longest zero run is the one compressed', given: '2001:db8::1:0:0:0:0/128', why: notCanonical('2001:db8:0:1::/128') },
  { name: 'on a tie the first zero run is compressed', given: '2001:0:0:1:0:0:1:1/128', why: notCanonical('2001::1:0:0:1:1/128') },
  { name: 'a single zero group is not compressed', given: '2001:db8::1:1:1:1:1/128', why: notCanonical('2001:db8:0:1:1:1:1:1/128') },
  { name: 'an embedded dotted quad is not canonical', given: '::1.2.3.4/128', why: notCanonical('::102:304/128') },
  {
    name: 'an IPv4-mapped IPv6 address is refused',
    given: '::ffff:10.0.0.0/104',
    why: 'is an IPv4-mapped IPv6 address, which is not allowed; write the IPv4 CIDR instead'
  },
  {
    name: 'prefix length 0 is refused',
    given: '0.0.0.0/0',
    why: 'has prefix length 0, which would cover every address; use a prefix length above 0'
  },
  { name: 'leading zeros in an IPv4 octet are refused', given: '010.244.0.0/16', why: NOT_A_CIDR },
  { name: 'a leading zero in the prefix length is refused', given: '10.244.0.0/016', why: NOT_A_CIDR },
  { name: 'a prefix longer than the family is refused', given: '10.244.0.0/33', why: NOT_A_CIDR },
  { name: 'an address without a prefix length is refused', given: '10.244.0.0', why: NOT_A_CIDR },
  { name: 'an IPv6 zone is refused', given: 'fe80::%eth0/64', why: NOT_A_CIDR }
]
for (const c of refused) {
  t.test(c.name, async (t) => {
    t.same(parsePodCidrs(c.given), { state: 'invalid', errors: [`entry 1 "${c.given}" ${c.why}`] })
  })
}

/** Values with an empty entry or several entries: every error, in entry order. */
const refusedEntries: Array<{ name: string; given: string; errors: string[] }> = [
  { name: 'a trailing comma is an empty entry', given: '10.244.0.0/16,', errors: ['entry 2 "" is empty; remove the extra comma'] },
  {
    name: 'every bad entry is reported, good ones are not',
    given: 'nope,10.244.0.0/16,10.1.2.3/8',
    errors: [
      'entry 1 "nope" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)',
      'entry 3 "10.1.2.3/8" has bits set beyond the prefix length; write 10.0.0.0/8'
    ]
  }
]
for (const c of refusedEntries) {
  t.test(c.name, async (t) => {
    t.same(parsePodCidrs(c.given), { state: 'invalid', errors: c.errors })
  })
}

import t from 'tap'
import { parsePodCidrs, type PodCidrSetting } from '../../hooks/isolation/cidrs.ts'

const cases: Array<{ name: string; given: string | undefined; expected: PodCidrSetting }> = [
  { name: 'an absent setting turns isolation off', given: undefined, expected: { state: 'off' } },
  { name: 'a blank setting turns isolation off', given: '', expected: { state: 'off' } },
  { name: 'a setting of only whitespace turns isolation off', given: ' \t\n\u00a0\u0085\u3000', expected: { state: 'off' } },
  {
    name: 'a zero-width no-break space is not whitespace to CEL, so it is an invalid entry',
    given: '\ufeff',
    expected: { state: 'invalid', errors: ['entry 1 "\ufeff" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)'] }
  },
  {
    name: 'one IPv4 CIDR',
    given: '10.244.0.0/16',
    expected: { state: 'on', cidrs: { ipv4: ['10.244.0.0/16'], ipv6: [] } }
  },
  {
    name: 'one IPv6 CIDR',
    given: 'fd00:10:244::/56',
    expected: { state: 'on', cidrs: { ipv4: [], ipv6: ['fd00:10:244::/56'] } }
  },
  {
    name: 'entries are trimmed and split by family',
    given: ' fd00:10:244::/56 ,\t10.244.0.0/16 ',
    expected: { state: 'on', cidrs: { ipv4: ['10.244.0.0/16'], ipv6: ['fd00:10:244::/56'] } }
  },
  {
    name: 'CIDRs are sorted numerically by address, not as text',
    given: '10.244.0.0/16,9.0.0.0/8,10.3.0.0/16,192.168.0.0/16',
    expected: { state: 'on', cidrs: { ipv4: ['9.0.0.0/8', '10.3.0.0/16', '10.244.0.0/16', '192.168.0.0/16'], ipv6: [] } }
  },
  {
    name: 'the same address sorts by prefix length',
    given: '10.0.0.0/16,10.0.0.0/8',
    expected: { state: 'on', cidrs: { ipv4: ['10.0.0.0/8', '10.0.0.0/16'], ipv6: [] } }
  },
  {
    name: 'IPv6 CIDRs are sorted numerically by address',
    given: 'fd00:10:244::/56,fd00:9::/32,2001:db8::/32',
    expected: { state: 'on', cidrs: { ipv4: [], ipv6: ['2001:db8::/32', 'fd00:9::/32', 'fd00:10:244::/56'] } }
  },
  {
    name: 'duplicates collapse',
    given: '10.244.0.0/16, 10.244.0.0/16,fd00::/8,fd00::/8',
    expected: { state: 'on', cidrs: { ipv4: ['10.244.0.0/16'], ipv6: ['fd00::/8'] } }
  },
  {
    name: 'overlapping but different CIDRs are both kept',
    given: '10.0.0.0/8,10.1.0.0/16',
    expected: { state: 'on', cidrs: { ipv4: ['10.0.0.0/8', '10.1.0.0/16'], ipv6: [] } }
  },
  {
    name: 'host bits set is refused with the masked form to write',
    given: '10.244.0.1/16',
    expected: { state: 'invalid', errors: ['entry 1 "10.244.0.1/16" has bits set beyond the prefix length; write 10.244.0.0/16'] }
  },
  {
    name: 'IPv6 host bits set is refused with the masked form to write',
    given: 'fd00:10:244::1/56',
    expected: { state: 'invalid', errors: ['entry 1 "fd00:10:244::1/56" has bits set beyond the prefix length; write fd00:10:244::/56'] }
  },
  {
    name: 'upper-case IPv6 is not canonical',
    given: 'FD00:10:244::/56',
    expected: { state: 'invalid', errors: ['entry 1 "FD00:10:244::/56" is not in canonical form; write fd00:10:244::/56'] }
  },
  {
    name: 'uncompressed zero groups are not canonical',
    given: 'fd00:10:244:0:0:0:0:0/56',
    expected: { state: 'invalid', errors: ['entry 1 "fd00:10:244:0:0:0:0:0/56" is not in canonical form; write fd00:10:244::/56'] }
  },
  {
    name: 'leading zeros in an IPv6 group are not canonical',
    given: 'fd00:0010:244::/56',
    expected: { state: 'invalid', errors: ['entry 1 "fd00:0010:244::/56" is not in canonical form; write fd00:10:244::/56'] }
  },
  {
    name: 'the longest zero run is the one compressed',
    given: '2001:db8::1:0:0:0:0/128',
    expected: { state: 'invalid', errors: ['entry 1 "2001:db8::1:0:0:0:0/128" is not in canonical form; write 2001:db8:0:1::/128'] }
  },
  {
    name: 'on a tie the first zero run is compressed',
    given: '2001:0:0:1:0:0:1:1/128',
    expected: { state: 'invalid', errors: ['entry 1 "2001:0:0:1:0:0:1:1/128" is not in canonical form; write 2001::1:0:0:1:1/128'] }
  },
  {
    name: 'a longer later zero run wins over an earlier one',
    given: '2001:0:0:1::1/128',
    expected: { state: 'on', cidrs: { ipv4: [], ipv6: ['2001:0:0:1::1/128'] } }
  },
  {
    name: 'a single zero group is not compressed',
    given: '2001:db8::1:1:1:1:1/128',
    expected: { state: 'invalid', errors: ['entry 1 "2001:db8::1:1:1:1:1/128" is not in canonical form; write 2001:db8:0:1:1:1:1:1/128'] }
  },
  {
    name: 'a single zero group written out is canonical',
    given: '2001:db8:0:1:1:1:1:1/128',
    expected: { state: 'on', cidrs: { ipv4: [], ipv6: ['2001:db8:0:1:1:1:1:1/128'] } }
  },
  {
    name: 'an embedded dotted quad is not canonical',
    given: '::1.2.3.4/128',
    expected: { state: 'invalid', errors: ['entry 1 "::1.2.3.4/128" is not in canonical form; write ::102:304/128'] }
  },
  {
    name: 'an IPv4-mapped IPv6 address is refused',
    given: '::ffff:10.0.0.0/104',
    expected: {
      state: 'invalid',
      errors: ['entry 1 "::ffff:10.0.0.0/104" is an IPv4-mapped IPv6 address, which is not allowed; write the IPv4 CIDR instead']
    }
  },
  {
    name: 'prefix length 0 is refused',
    given: '0.0.0.0/0',
    expected: {
      state: 'invalid',
      errors: ['entry 1 "0.0.0.0/0" has prefix length 0, which would cover every address; use a prefix length above 0']
    }
  },
  {
    name: 'leading zeros in an IPv4 octet are refused',
    given: '010.244.0.0/16',
    expected: {
      state: 'invalid',
      errors: ['entry 1 "010.244.0.0/16" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)']
    }
  },
  {
    name: 'a leading zero in the prefix length is refused',
    given: '10.244.0.0/016',
    expected: {
      state: 'invalid',
      errors: ['entry 1 "10.244.0.0/016" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)']
    }
  },
  {
    name: 'a prefix longer than the family is refused',
    given: '10.244.0.0/33',
    expected: { state: 'invalid', errors: ['entry 1 "10.244.0.0/33" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)'] }
  },
  {
    name: 'an address without a prefix length is refused',
    given: '10.244.0.0',
    expected: { state: 'invalid', errors: ['entry 1 "10.244.0.0" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)'] }
  },
  {
    name: 'an IPv6 zone is refused',
    given: 'fe80::%eth0/64',
    expected: {
      state: 'invalid',
      errors: ['entry 1 "fe80::%eth0/64" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)']
    }
  },
  {
    name: 'a trailing comma is an empty entry',
    given: '10.244.0.0/16,',
    expected: { state: 'invalid', errors: ['entry 2 "" is empty; remove the extra comma'] }
  },
  {
    name: 'every bad entry is reported, good ones are not',
    given: 'nope,10.244.0.0/16,10.1.2.3/8',
    expected: {
      state: 'invalid',
      errors: [
        'entry 1 "nope" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)',
        'entry 3 "10.1.2.3/8" has bits set beyond the prefix length; write 10.0.0.0/8'
      ]
    }
  }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    t.same(parsePodCidrs(c.given), c.expected)
  })
}

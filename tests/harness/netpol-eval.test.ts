import t from 'tap'
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.d.ts'
import {
  connectionAllowed,
  inBlock,
  parseCidr,
  parseIp,
  policyTypes,
  selectorMatches,
  type ClusterView,
  type Connection,
  type Endpoint
} from '../support/netpol-eval.ts'

const web: Endpoint = { name: 'web', ip: '10.0.1.5', pod: { namespace: 'a', labels: { app: 'web' } } }
const db: Endpoint = {
  name: 'db',
  ip: '10.0.1.6',
  pod: { namespace: 'a', labels: { app: 'db' }, namedPorts: { pg: { port: 5432, protocol: 'TCP' } } }
}
const otherNs: Endpoint = { name: 'b/web', ip: '10.0.2.5', pod: { namespace: 'b', labels: { app: 'web' } } }
const outside: Endpoint = { name: 'outside', ip: '192.0.2.10' }
const outside6: Endpoint = { name: 'outside6', ip: '2001:db8::10' }
const db6: Endpoint = { ...db, name: 'db6', ip: 'fd00::6' }

function policy(namespace: string, spec: NetworkPolicy['spec']): NetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'p', namespace }, spec }
}

const denyIngressToDb = policy('a', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] })
const dbFromSameNamespaceWeb = policy('a', {
  podSelector: { matchLabels: { app: 'db' } },
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] }]
})
const dbFromNamespaceB = policy('a', {
  podSelector: { matchLabels: { app: 'db' } },
  ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }] }]
})
const dbFromNamespaceBWeb = policy('a', {
  podSelector: { matchLabels: { app: 'db' } },
  ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } }, podSelector: { matchLabels: { app: 'api' } } }] }]
})
const dbFromOutsideExceptPods = policy('a', {
  podSelector: {},
  ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/16'] } }] }]
})
const dbFromOutside6 = policy('a', {
  podSelector: {},
  ingress: [{ from: [{ ipBlock: { cidr: '::/0', except: ['fd00::/8'] } }] }]
})
const webEgressDnsOnly = policy('a', {
  podSelector: { matchLabels: { app: 'web' } },
  egress: [
    {
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' }
      ]
    }
  ]
})
const webEgressRange = policy('a', {
  podSelector: { matchLabels: { app: 'web' } },
  policyTypes: ['Egress'],
  egress: [{ ports: [{ port: 8000, endPort: 8080 }] }]
})
const dbNamedPort = policy('a', { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ ports: [{ port: 'pg' }] }] })
const dbAllowAll = policy('a', { podSelector: { matchLabels: { app: 'db' } }, ingress: [{}] })
const exprSelected = policy('a', {
  podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['db', 'cache'] }] },
  policyTypes: ['Ingress']
})

const cluster = (...policies: NetworkPolicy[]): ClusterView => ({ policies, namespaceLabels: { b: { team: 'b' } } })
const tcp = (from: Endpoint, to: Endpoint, port = 5432): Connection => ({ from, to, port, protocol: 'TCP' })
const udp = (from: Endpoint, to: Endpoint, port: number): Connection => ({ from, to, port, protocol: 'UDP' })

/** Connections under the policies of each row, and whether they are admitted. */
const cases: Array<{ name: string; policies: NetworkPolicy[]; conn: Connection; admitted: boolean }> = [
  { name: 'a pod no policy selects admits everything', policies: [], conn: tcp(otherNs, db), admitted: true },
  { name: 'a policy without ingress rules denies all ingress', policies: [denyIngressToDb], conn: tcp(web, db), admitted: false },
  { name: 'a policy does not isolate pods it does not select', policies: [denyIngressToDb], conn: tcp(db, web, 80), admitted: true },
  {
    name: 'a podSelector peer admits a matching pod of the same namespace',
    policies: [dbFromSameNamespaceWeb],
    conn: tcp(web, db),
    admitted: true
  },
  {
    name: 'a podSelector peer does not admit the same labels in another namespace',
    policies: [dbFromSameNamespaceWeb],
    conn: tcp(otherNs, db),
    admitted: false
  },
  { name: 'a rule port limits the admitted port', policies: [dbFromSameNamespaceWeb], conn: tcp(web, db, 22), admitted: false },
  { name: 'a port without protocol means TCP only', policies: [dbFromSameNamespaceWeb], conn: udp(web, db, 5432), admitted: false },
  {
    name: 'a namespaceSelector peer admits pods of a matching namespace',
    policies: [dbFromNamespaceB],
    conn: tcp(otherNs, db),
    admitted: true
  },
  {
    name: 'a namespaceSelector peer does not admit the policy namespace unless it matches',
    policies: [dbFromNamespaceB],
    conn: tcp(web, db),
    admitted: false
  },
  {
    name: 'namespaceSelector and podSelector together need both to match',
    policies: [dbFromNamespaceBWeb],
    conn: tcp(otherNs, db),
    admitted: false
  },
  {
    name: 'an ipBlock admits an address outside its except list',
    policies: [dbFromOutsideExceptPods],
    conn: tcp(outside, db),
    admitted: true
  },
  { name: 'an ipBlock except list excludes pod addresses', policies: [dbFromOutsideExceptPods], conn: tcp(otherNs, db), admitted: false },
  { name: 'an IPv4 ipBlock admits nothing over IPv6', policies: [dbFromOutsideExceptPods], conn: tcp(outside6, db6), admitted: false },
  {
    name: 'an IPv6 ipBlock admits an IPv6 address outside its except list',
    policies: [dbFromOutside6],
    conn: tcp(outside6, db6),
    admitted: true
  },
  {
    name: 'an IPv6 ipBlock except list excludes IPv6 pod addresses',
    policies: [dbFromOutside6],
    conn: tcp({ ...otherNs, ip: 'fd00::99' }, db6),
    admitted: false
  },
  {
    name: 'egress rules limit where a selected pod may connect',
    policies: [webEgressDnsOnly],
    conn: tcp(web, outside, 443),
    admitted: false
  },
  {
    name: 'an egress rule without peers admits its ports anywhere',
    policies: [webEgressDnsOnly],
    conn: udp(web, otherNs, 53),
    admitted: true
  },
  {
    name: 'a policy with egress rules and no policyTypes isolates egress too',
    policies: [webEgressDnsOnly],
    conn: tcp(web, db, 80),
    admitted: false
  },
  { name: 'an egress-only policy leaves ingress open', policies: [webEgressRange], conn: tcp(otherNs, web, 80), admitted: true },
  { name: 'endPort admits the whole range', policies: [webEgressRange], conn: tcp(web, outside, 8080), admitted: true },
  { name: 'endPort admits nothing past the range', policies: [webEgressRange], conn: tcp(web, outside, 8081), admitted: false },
  { name: 'a named port matches the destination container port', policies: [dbNamedPort], conn: tcp(otherNs, db, 5432), admitted: true },
  { name: 'a named port does not match another port', policies: [dbNamedPort], conn: tcp(otherNs, db, 5433), admitted: false },
  { name: 'an empty rule admits everything', policies: [dbAllowAll], conn: tcp(otherNs, db, 1), admitted: true },
  {
    name: 'policies add up: any selecting policy may admit',
    policies: [denyIngressToDb, dbFromSameNamespaceWeb],
    conn: tcp(web, db),
    admitted: true
  },
  { name: 'a connection needs the source egress too', policies: [webEgressDnsOnly, dbAllowAll], conn: tcp(web, db), admitted: false },
  { name: 'matchExpressions In selects the listed values', policies: [exprSelected], conn: tcp(web, db), admitted: false }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    t.equal(connectionAllowed(cluster(...c.policies), c.conn), c.admitted)
  })
}

const selectorCases: Array<{ name: string; given: Parameters<typeof selectorMatches>; expected: boolean }> = [
  { name: 'an empty selector matches everything', given: [{}, { any: 'thing' }], expected: true },
  { name: 'matchLabels needs every pair', given: [{ matchLabels: { a: '1', b: '2' } }, { a: '1' }], expected: false },
  {
    name: 'NotIn matches an absent key',
    given: [{ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, {}],
    expected: true
  },
  {
    name: 'NotIn rejects a listed value',
    given: [{ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, { a: '1' }],
    expected: false
  },
  { name: 'Exists needs the key', given: [{ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, { b: '' }], expected: false },
  {
    name: 'DoesNotExist rejects the key',
    given: [{ matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { a: '' }],
    expected: false
  }
]
for (const c of selectorCases) {
  t.test(c.name, async (t) => {
    t.equal(selectorMatches(...c.given), c.expected)
  })
}

const cidrCases: Array<{ name: string; given: { ip: string; cidr: string }; expected: boolean }> = [
  { name: 'an IPv4 address inside a /16', given: { ip: '10.244.3.7', cidr: '10.244.0.0/16' }, expected: true },
  { name: 'an IPv4 address just past a /16', given: { ip: '10.245.0.0', cidr: '10.244.0.0/16' }, expected: false },
  { name: 'every IPv4 address is in 0.0.0.0/0', given: { ip: '255.255.255.255', cidr: '0.0.0.0/0' }, expected: true },
  { name: 'a /32 holds one address', given: { ip: '10.0.0.2', cidr: '10.0.0.1/32' }, expected: false },
  { name: 'an IPv6 address inside a /56', given: { ip: 'fd00:10:244:ff::1', cidr: 'fd00:10:244::/56' }, expected: true },
  { name: 'an IPv6 address just past a /56', given: { ip: 'fd00:10:244:100::', cidr: 'fd00:10:244::/56' }, expected: false },
  { name: 'every IPv6 address is in ::/0', given: { ip: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', cidr: '::/0' }, expected: true },
  { name: 'an IPv4 address is never in an IPv6 block', given: { ip: '10.0.0.1', cidr: '::/0' }, expected: false },
  { name: 'an IPv6 address is never in an IPv4 block', given: { ip: '::a00:1', cidr: '0.0.0.0/0' }, expected: false }
]
for (const c of cidrCases) {
  t.test(c.name, async (t) => {
    t.equal(inBlock(parseIp(c.given.ip), parseCidr(c.given.cidr)), c.expected)
  })
}

t.test('IPv6 text forms parse to the same number', async (t) => {
  t.equal(parseIp('fd00:0:0:0:0:0:0:1').value, parseIp('fd00::1').value)
  t.equal(parseIp('::').value, 0n)
  t.equal(parseIp('1::').value, 1n << 112n)
  t.throws(() => parseIp('1::2::3'))
  t.throws(() => parseIp('1.2.3'))
})

t.test('policyTypes default as the API server defaults them', async (t) => {
  t.same(policyTypes(policy('a', { podSelector: {} })), ['Ingress'])
  t.same(policyTypes(policy('a', { podSelector: {}, egress: [{}] })), ['Ingress', 'Egress'])
  t.same(policyTypes(policy('a', { podSelector: {}, policyTypes: ['Egress'] })), ['Egress'])
})

/**
 * What the rendered policy means on the wire: buildPolicy's output, evaluated with standard
 * NetworkPolicy semantics (tests/support/netpol-eval.ts) over a matrix of peers, directions and
 * address families. The seed: same namespace and external clients allowed, every other
 * namespace blocked in both directions, DNS (port 53) open.
 */
import t from 'tap'
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.d.ts'
import { buildPolicy } from '../../hooks/isolation/policy.ts'
import { parsePodCidrs, type PodCidrs } from '../../hooks/isolation/cidrs.ts'
import { connectionAllowed, type ClusterView, type Connection, type Endpoint, type Protocol } from '../support/netpol-eval.ts'

type Family = 'IPv4' | 'IPv6'

/** Each workload has one address per family (a dual-stack cluster). */
interface Workload {
  name: string
  ip: Record<Family, string>
  pod?: Endpoint['pod']
}

const instance: Workload = {
  name: 'the instance',
  ip: { IPv4: '10.244.1.10', IPv6: 'fd00:10:244:1::10' },
  pod: { namespace: 'tenant-a', labels: { 'resource.gpustack.ai/type': 'instances', 'app.kubernetes.io/part-of': 'box' } }
}
const sameNamespacePod: Workload = {
  name: 'a Pod of the same namespace',
  ip: { IPv4: '10.244.1.11', IPv6: 'fd00:10:244:1::11' },
  pod: { namespace: 'tenant-a', labels: { app: 'notebook-proxy' } }
}
const otherNamespaceInstance: Workload = {
  name: 'a Pod of another namespace inside the pod CIDRs',
  ip: { IPv4: '10.244.2.10', IPv6: 'fd00:10:244:2::10' },
  pod: { namespace: 'tenant-b', labels: { 'resource.gpustack.ai/type': 'instances' } }
}
const externalClient: Workload = { name: 'an external client', ip: { IPv4: '203.0.113.7', IPv6: '2001:db8:ffff::7' } }
const dnsServer: Workload = {
  name: 'the DNS server',
  ip: { IPv4: '10.244.0.10', IPv6: 'fd00:10:244::a' },
  pod: { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } }
}

function endpoint(w: Workload, family: Family): Endpoint {
  return w.pod === undefined ? { name: w.name, ip: w.ip[family] } : { name: w.name, ip: w.ip[family], pod: w.pod }
}

interface Probe {
  peer: Workload
  port: number
  protocol: Protocol
  /** Expected for traffic from the peer to the instance. */
  inbound: boolean | 'if the family is named'
  /** Expected for traffic from the instance to the peer. */
  outbound: boolean | 'if the family is named'
}

const probes: Probe[] = [
  { peer: sameNamespacePod, port: 8080, protocol: 'TCP', inbound: true, outbound: true },
  { peer: sameNamespacePod, port: 5353, protocol: 'UDP', inbound: true, outbound: true },
  { peer: otherNamespaceInstance, port: 8080, protocol: 'TCP', inbound: false, outbound: false },
  { peer: otherNamespaceInstance, port: 22, protocol: 'TCP', inbound: false, outbound: false },
  { peer: externalClient, port: 8888, protocol: 'TCP', inbound: 'if the family is named', outbound: 'if the family is named' },
  { peer: externalClient, port: 443, protocol: 'UDP', inbound: 'if the family is named', outbound: 'if the family is named' },
  { peer: dnsServer, port: 53, protocol: 'UDP', inbound: false, outbound: true },
  { peer: dnsServer, port: 53, protocol: 'TCP', inbound: false, outbound: true },
  { peer: dnsServer, port: 9153, protocol: 'TCP', inbound: false, outbound: false }
]

interface Scenario {
  name: string
  setting: string
  /** Address families the cluster's Pods and clients use. */
  families: Family[]
}

const scenarios: Scenario[] = [
  { name: 'IPv4 setting on an IPv4 cluster', setting: '10.244.0.0/16', families: ['IPv4'] },
  { name: 'IPv6 setting on an IPv6 cluster', setting: 'fd00:10:244::/56', families: ['IPv6'] },
  { name: 'dual-stack setting on a dual-stack cluster', setting: '10.244.0.0/16,fd00:10:244::/56', families: ['IPv4', 'IPv6'] },
  { name: 'only IPv4 CIDRs on a dual-stack cluster', setting: '10.244.0.0/16', families: ['IPv4', 'IPv6'] }
]

function cidrsOf(setting: string): PodCidrs {
  const parsed = parsePodCidrs(setting)
  if (parsed.state !== 'on') throw new Error(`fixture setting ${setting} does not parse`)
  return parsed.cidrs
}

/** The policy as the API server would hand it to a CNI: plain JSON. */
function stored(namespace: string, cidrs: PodCidrs): NetworkPolicy {
  return JSON.parse(JSON.stringify(buildPolicy(namespace, cidrs))) as NetworkPolicy
}

interface Row {
  name: string
  given: { cluster: ClusterView; conn: Connection }
  expected: boolean
}

const rows: Row[] = []
for (const scenario of scenarios) {
  const cidrs = cidrsOf(scenario.setting)
  const named: Record<Family, boolean> = { IPv4: cidrs.ipv4.length > 0, IPv6: cidrs.ipv6.length > 0 }
  // tenant-a's policy alone must block both directions; with tenant-b isolated too, nothing changes.
  const views: Array<[string, ClusterView]> = [
    ['tenant-a isolated', { policies: [stored('tenant-a', cidrs)] }],
    ['both tenants isolated', { policies: [stored('tenant-a', cidrs), stored('tenant-b', cidrs)] }]
  ]
  for (const [viewName, cluster] of views) {
    for (const family of scenario.families) {
      for (const probe of probes) {
        const expect = (e: Probe['inbound']): boolean => (e === 'if the family is named' ? named[family] : e)
        const what = `${probe.port}/${probe.protocol} over ${family} (${scenario.name}, ${viewName})`
        rows.push({
          name: `${probe.peer.name} reaching the instance on ${what}`,
          given: {
            cluster,
            conn: { from: endpoint(probe.peer, family), to: endpoint(instance, family), port: probe.port, protocol: probe.protocol }
          },
          expected: expect(probe.inbound)
        })
        rows.push({
          name: `the instance reaching ${probe.peer.name} on ${what}`,
          given: {
            cluster,
            conn: { from: endpoint(instance, family), to: endpoint(probe.peer, family), port: probe.port, protocol: probe.protocol }
          },
          expected: expect(probe.outbound)
        })
      }
    }
  }
}

for (const row of rows) {
  t.test(row.name, async (t) => {
    t.equal(connectionAllowed(row.given.cluster, row.given.conn), row.expected)
  })
}

t.test('only IPv4 CIDRs on a dual-stack cluster opens nothing over IPv6 but the namespace and DNS', async (t) => {
  const cluster = { policies: [stored('tenant-a', cidrsOf('10.244.0.0/16'))] }
  const over6 = (from: Workload, to: Workload, port: number, protocol: Protocol): boolean =>
    connectionAllowed(cluster, { from: endpoint(from, 'IPv6'), to: endpoint(to, 'IPv6'), port, protocol })
  t.equal(over6(externalClient, instance, 8888, 'TCP'), false, 'no external client over IPv6')
  t.equal(over6(instance, externalClient, 443, 'TCP'), false, 'no external destination over IPv6')
  t.equal(over6(otherNamespaceInstance, instance, 8080, 'TCP'), false, 'no other tenant over IPv6')
  t.equal(over6(sameNamespacePod, instance, 8080, 'TCP'), true, 'the namespace itself over IPv6')
  t.equal(over6(instance, dnsServer, 53, 'UDP'), true, 'DNS over IPv6')
})

t.test("without the policy every probe is allowed, so the denials above are the policy's doing", async (t) => {
  const open: ClusterView = { policies: [] }
  for (const probe of probes) {
    for (const family of ['IPv4', 'IPv6'] as const) {
      const conn = { from: endpoint(probe.peer, family), to: endpoint(instance, family), port: probe.port, protocol: probe.protocol }
      t.equal(connectionAllowed(open, conn), true, `${probe.peer.name} over ${family}`)
    }
  }
})

t.test('Pods of the namespace that are not Instances are not isolated by the policy', async (t) => {
  const cluster = { policies: [stored('tenant-a', cidrsOf('10.244.0.0/16'))] }
  const conn = {
    from: endpoint(otherNamespaceInstance, 'IPv4'),
    to: endpoint(sameNamespacePod, 'IPv4'),
    port: 80,
    protocol: 'TCP' as const
  }
  t.equal(connectionAllowed(cluster, conn), true)
})

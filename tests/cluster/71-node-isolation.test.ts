/**
 * Tenant isolation with packets (docs/isolation.md, "Isolation with packets"): the policy the hook
 * renders, enforced by kube-router's firewall on a real node, with the Setting naming the node's
 * pod CIDR. Each row of the table in docs/isolation.md, "Isolation with packets", is one probe here: a TCP
 * connection (or a DNS query) from a Pod, from the node itself, or from a client outside every pod
 * CIDR, to a Pod's address or a node port. Then the Setting blanked: the policies collected and the
 * traffic flowing; and a hand-written policy of the same name, untouched through both.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { runCommand } from './support/cluster.ts'
import { startNodeScenario } from './support/node-scenario.ts'
import { DNS_SERVER, HTTP_SERVER, probeFromHost, probeFromOutside, probeFromPod, type ProbeResult } from './support/node-probe.ts'
import { importImages } from './support/node-images.ts'
import { driveInstance } from './support/node-drive.ts'
import { NODE_NET } from './support/node-host.ts'
import { HAMI_TYPE, webInstance } from './support/node-workloads.ts'
import { apply, createNamespaces, getJson } from './support/kubectl.ts'

type Obj = any

const env = await startNodeScenario()
const { cluster, node } = env
const image = (await importImages(node)).node
const isolation = env.driver('gpuhooks-instance-isolation')
const POLICY = 'gpustack-instance-isolation'
const TENANTS = ['tenant-a', 'tenant-b', 'tenant-c'] as const

/** A server in the outside namespace, for egress to an address outside the pod CIDRs. */
const outsideServer = spawn('ip', ['netns', 'exec', NODE_NET.outside.netns, process.execPath, '-e', HTTP_SERVER], {
  env: { ...process.env, PORTS: '8080' },
  stdio: 'ignore'
})
const outsideServerGone = new Promise<void>((resolve) => outsideServer.once('exit', () => resolve()))
/** Ends the outside server; the outside namespace (and the node's link) goes only once no process holds it. */
async function stopOutsideServer(): Promise<void> {
  if (outsideServer.exitCode === null && outsideServer.signalCode === null) outsideServer.kill('SIGKILL')
  await outsideServerGone
}
t.teardown(stopOutsideServer)

const pods: Record<string, { namespace: string; name: string; ip: string; nodePort: number }> = {}
let dnsIP = ''

/** Sets the Setting and lets the isolation decorator sync every tenant namespace. */
async function setPodCidrs(value: string): Promise<void> {
  await apply(cluster, { apiVersion: 'gpustack.ai/v1alpha1', kind: 'Setting', metadata: { name: 'instance-isolation-pod-cidrs' }, value })
  for (const ns of TENANTS) await isolation.settle({ name: ns }, { maxPasses: 3 })
}

t.before(async () => {
  await createNamespaces(cluster, [...TENANTS, 'dns'])
  await apply(cluster, HAMI_TYPE)
  // A hand-written policy of the product's name in tenant-c: no ingress at all to its Instances.
  await apply(cluster, {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: POLICY, namespace: 'tenant-c' },
    spec: { podSelector: {}, policyTypes: ['Ingress'] }
  })
  for (const [namespace, name] of [
    ['tenant-a', 'a1'],
    ['tenant-a', 'a2'],
    ['tenant-b', 'b1'],
    ['tenant-c', 'c1']
  ] as const) {
    await apply(cluster, webInstance(namespace, name, image))
    const running = await driveInstance(env, { namespace, name }, 'Running', (i: Obj) => i.status?.phase === 'Running')
    pods[name] = { namespace, name, ip: running.status.podIP, nodePort: running.status.ports[0].nodePort }
  }
  // The stand-in DNS server: a plain Pod in a namespace without any policy.
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'dns', namespace: 'dns' },
    spec: {
      automountServiceAccountToken: false,
      containers: [{ name: 'main', image, command: ['node', '-e', DNS_SERVER], securityContext: { runAsUser: 0 } }]
    }
  })
  await cluster.kubectl(['wait', '--for=condition=Ready', '-n', 'dns', 'pod/dns', '--timeout=120s'])
  dnsIP = (await getJson(cluster, ['pod', 'dns', '-n', 'dns'])).status.podIP
})

/** Packets kube-router's firewall has rejected so far: the counters of its per-Pod REJECT rules. */
async function rejectedPackets(): Promise<number> {
  const { stdout } = await runCommand('iptables-save', ['-c', '-t', 'filter'])
  let total = 0
  for (const line of stdout.split('\n')) {
    const counters = /^\[(\d+):\d+\] .*rule to REJECT traffic destined for POD.* -j REJECT/.exec(line)
    if (counters !== null) total += Number(counters[1])
  }
  return total
}

/** A probe and whether kube-router's REJECT rules counted a packet meanwhile. */
async function counted(probe: () => Promise<ProbeResult>): Promise<{ result: ProbeResult; rejectedByFirewall: boolean }> {
  const before = await rejectedPackets()
  const result = await probe()
  return { result, rejectedByFirewall: (await rejectedPackets()) > before }
}

const fromPod = (name: string, host: string, port: number, kind: 'tcp' | 'dns' = 'tcp') =>
  probeFromPod(cluster, pods[name]!, host, port, kind)
const ip = (name: string): string => pods[name]!.ip
const nodePort = (name: string): number => pods[name]!.nodePort
/** An answer of `by`'s server, to a connection from `from` (Node prints IPv4 clients IPv4-mapped). */
const server = (by: string, from?: string): RegExp =>
  new RegExp(`^${by} 8080 ${from === undefined ? '' : `(::ffff:)?${from.replace(/\./g, '\\.')}$`}`)
const OUTSIDE = NODE_NET.outside.address

/**
 * The table in docs/isolation.md, "Isolation with packets": each row a probe, its answer when let through, and
 * what the policy does with the Setting naming the pod CIDR and with the Setting blank.
 */
const ROWS: { row: string; probe: () => Promise<ProbeResult>; answer: RegExp | string; named: Outcome; blank: Outcome }[] = [
  {
    row: 'tenant-a Pod → tenant-b Pod',
    probe: () => fromPod('a1', ip('b1'), 8080),
    answer: server('b1'),
    named: 'refused',
    blank: 'answered'
  },
  {
    row: 'tenant-b Pod → tenant-a Pod',
    probe: () => fromPod('b1', ip('a1'), 8080),
    answer: server('a1'),
    named: 'refused',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → tenant-a Pod',
    probe: () => fromPod('a1', ip('a2'), 8080),
    answer: server('a2'),
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → DNS Pod, UDP 53 (a query)',
    probe: () => fromPod('a1', dnsIP, 53, 'dns'),
    answer: '192.0.2.53',
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → DNS Pod, TCP 53',
    probe: () => fromPod('a1', dnsIP, 53),
    answer: /^dns-tcp/,
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → DNS Pod, TCP 8053',
    probe: () => fromPod('a1', dnsIP, 8053),
    answer: /^not-dns/,
    named: 'refused',
    blank: 'answered'
  },
  {
    row: 'outside client → node port of a1 (the client address kept)',
    probe: () => probeFromOutside(env.node.address, nodePort('a1')),
    answer: server('a1', OUTSIDE),
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'outside client → tenant-b Pod',
    probe: () => probeFromOutside(ip('b1'), 8080),
    answer: server('b1', OUTSIDE),
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → outside address',
    probe: () => fromPod('a1', OUTSIDE, 8080),
    answer: /^\S+ 8080 /,
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'the node → node port of a1',
    probe: () => probeFromHost(env.node.address, nodePort('a1')),
    answer: server('a1'),
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'the node → tenant-b Pod, from the bridge address inside the pod CIDR (the documented limit)',
    probe: () => probeFromHost(ip('b1'), 8080),
    answer: server('b1', '10.244.0.1'),
    named: 'answered',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → node address and node port of b1',
    probe: () => fromPod('a1', env.node.address, nodePort('b1')),
    answer: server('b1'),
    named: 'refused',
    blank: 'answered'
  },
  {
    row: 'tenant-a Pod → tenant-c Pod (hand-written policy)',
    probe: () => fromPod('a2', ip('c1'), 8080),
    answer: server('c1'),
    named: 'refused',
    blank: 'refused'
  },
  {
    row: 'outside client → tenant-c Pod (hand-written policy)',
    probe: () => probeFromOutside(ip('c1'), 8080),
    answer: server('c1'),
    named: 'refused',
    blank: 'refused'
  },
  {
    row: 'tenant-c Pod → tenant-a Pod',
    probe: () => fromPod('c1', ip('a1'), 8080),
    answer: server('a1'),
    named: 'refused',
    blank: 'answered'
  }
]
type Outcome = 'answered' | 'refused'

/** Every row, one probe each, against the column's expectation. */
async function probeRows(t: Test, column: 'named' | 'blank'): Promise<void> {
  for (const row of ROWS) {
    const seen = await counted(row.probe)
    if (row[column] === 'answered') t.match(seen.result, { open: true, answer: row.answer }, `${row.row}: answered`)
    else t.match(seen, { result: { open: false }, rejectedByFirewall: true }, `${row.row}: refused by the firewall`)
  }
}

/** Waits until kube-router has applied the policy change the first row shows (its own schedule, at most 60 s). */
async function firewallSettled(expect: Outcome): Promise<void> {
  const deadline = Date.now() + 60_000
  while ((await ROWS[0]!.probe()).open !== (expect === 'answered') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

t.test('the Setting names the node pod CIDR: the policy drops what the seed says it blocks', async (t) => {
  const node = await getJson(cluster, ['node', env.node.name])
  t.same(node.spec.podCIDRs, [NODE_NET.podCidr], "the node's pod CIDR, as docs/isolation.md says to find it")
  await setPodCidrs(node.spec.podCIDRs.join(','))
  for (const ns of ['tenant-a', 'tenant-b'])
    t.ok((await getJson(cluster, ['networkpolicy', POLICY, '-n', ns])).metadata, `${ns} has the policy`)
  const handWritten = await getJson(cluster, ['networkpolicy', POLICY, '-n', 'tenant-c'])
  t.same(handWritten.spec, { podSelector: {}, policyTypes: ['Ingress'] }, 'the hand-written policy: as written')
  t.notOk(handWritten.metadata.labels?.['app.kubernetes.io/managed-by'], 'the hand-written policy: not labelled as ours')
  await firewallSettled('refused')
  await probeRows(t, 'named')
})

t.test('the Setting blanked: the policies collected and the traffic flows; the hand-written one untouched', async (t) => {
  const written = (await getJson(cluster, ['networkpolicy', POLICY, '-n', 'tenant-c'])).metadata.resourceVersion
  await setPodCidrs('')
  for (const ns of ['tenant-a', 'tenant-b']) {
    const left = await cluster.kubectl(['get', 'networkpolicy', POLICY, '-n', ns], { allowFail: true })
    t.match(left.stderr, /NotFound/, `${ns}: the policy is collected`)
  }
  const still = await getJson(cluster, ['networkpolicy', POLICY, '-n', 'tenant-c'])
  t.equal(still.metadata.resourceVersion, written, 'the hand-written policy: not written')
  await firewallSettled('answered')
  await probeRows(t, 'blank')
})

t.test('the node leaves nothing on the machine', async (t) => {
  await stopOutsideServer()
  t.same(await env.node.stop(), [], 'every step of the stop succeeded')
  t.same(await env.node.leftovers(), [], 'no link, netns, iptables chain, ipset, mount or cgroup of the node is left')
})

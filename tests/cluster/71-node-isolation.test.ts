/**
 * Tenant isolation with packets (isolation.md; seed "Network isolation"): the policy the hook
 * renders, enforced by kube-router's firewall on a real node, with the Setting naming the node's
 * pod CIDR. Each row of the README's table "Isolation with packets" is one probe here: a TCP
 * connection (or a DNS query) from a Pod, from the node itself, or from a client outside every pod
 * CIDR, to a Pod's address or a node port. Then the Setting blanked: the policies collected and the
 * traffic flowing; and a hand-written policy of the same name, untouched through both.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { runCommand } from './support/cluster.ts'
import { startNodeScenario } from './support/node-scenario.ts'
import { DNS_SERVER, HTTP_SERVER, probeFromHost, probeFromOutside, probeFromPod, type ProbeResult } from './support/node-probe.ts'
import { workloadImage } from './support/node-images.ts'
import { driveInstance } from './support/node-drive.ts'
import { NODE_NET } from './support/node-host.ts'
import { apply, createNamespaces, getJson, HAMI_TYPE, webInstance } from './support/node-workloads.ts'

type Obj = any

const env = await startNodeScenario()
const { cluster, node } = env
const image = await workloadImage(node)
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

/** Probes until `accept` holds: kube-router applies a policy change on its own schedule (at most 60 s). */
async function settled(probe: () => Promise<ProbeResult>, accept: (r: ProbeResult) => boolean): Promise<ProbeResult> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const result = await probe()
    if (accept(result) || Date.now() > deadline) return result
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

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

/** A probe that must be refused, with kube-router's REJECT rules counting its packets: the policy dropped them. */
async function refusedByPolicy(probe: () => Promise<ProbeResult>): Promise<{ result: ProbeResult; rejectedByFirewall: boolean }> {
  const before = await rejectedPackets()
  const result = await probe()
  return { result, rejectedByFirewall: (await rejectedPackets()) > before }
}
const dropped = { result: { open: false }, rejectedByFirewall: true }

const fromPod = (name: string, host: string, port: number, kind: 'tcp' | 'dns' = 'tcp') =>
  probeFromPod(cluster, pods[name]!, host, port, kind)
const blocked = { open: false }
/** An answer of `by`'s server, to a connection from `from` (Node prints IPv4 clients IPv4-mapped). */
const answered = (by: string, from?: string) => ({
  open: true,
  answer: new RegExp(`^${by} 8080 ${from === undefined ? '' : `(::ffff:)?${from.replace(/\./g, '\\.')}$`}`)
})

t.test('the Setting names the node pod CIDR: the policy drops what the seed says it blocks', async (t) => {
  const node = await getJson(cluster, ['node', env.node.name])
  t.same(node.spec.podCIDRs, [NODE_NET.podCidr], "the node's pod CIDR, as the README says to find it")
  await setPodCidrs(node.spec.podCIDRs.join(','))
  for (const ns of ['tenant-a', 'tenant-b'])
    t.ok((await getJson(cluster, ['networkpolicy', POLICY, '-n', ns])).metadata, `${ns} has the policy`)
  // The first row waits for kube-router to apply the policies; every later row is one probe.
  t.match(
    await settled(
      () => fromPod('a1', pods['b1']!.ip, 8080),
      (r) => !r.open
    ),
    blocked,
    'tenant-a Pod → tenant-b Pod: blocked'
  )
  t.match(await refusedByPolicy(() => fromPod('b1', pods['a1']!.ip, 8080)), dropped, 'tenant-b Pod → tenant-a Pod: blocked')
  t.match(await fromPod('a1', pods['a2']!.ip, 8080), answered('a2'), 'tenant-a Pod → tenant-a Pod: allowed')
  t.match(await fromPod('a1', dnsIP, 53, 'dns'), { open: true, answer: '192.0.2.53' }, 'tenant-a Pod → DNS Pod, UDP 53 (a query): allowed')
  t.match(await fromPod('a1', dnsIP, 53), { open: true, answer: /^dns-tcp/ }, 'tenant-a Pod → DNS Pod, TCP 53: allowed')
  t.match(
    await refusedByPolicy(() => fromPod('a1', dnsIP, 8053)),
    dropped,
    'tenant-a Pod → DNS Pod, TCP 8053: blocked (only port 53 is open)'
  )
  const { address } = NODE_NET.outside
  t.match(
    await probeFromOutside(env.node.address, pods['a1']!.nodePort),
    answered('a1', address),
    'outside client → node port of a1: allowed, the client address kept'
  )
  t.match(await probeFromOutside(pods['b1']!.ip, 8080), answered('b1', address), 'outside client → tenant-b Pod: allowed')
  t.match(await fromPod('a1', address, 8080), { open: true, answer: /^\S+ 8080 / }, 'tenant-a Pod → outside address: allowed')
  t.match(await probeFromHost(env.node.address, pods['a1']!.nodePort), answered('a1'), 'the node → node port of a1: allowed')
  // The documented limit: traffic from the hosting node is always allowed, even from an address
  // (the bridge's) inside the pod CIDR the policy excludes.
  t.match(
    await probeFromHost(pods['b1']!.ip, 8080),
    answered('b1', '10.244.0.1'),
    'the node → tenant-b Pod: allowed (the documented limit)'
  )
  t.match(
    await refusedByPolicy(() => fromPod('a1', env.node.address, pods['b1']!.nodePort)),
    dropped,
    'tenant-a Pod → node address and node port of b1: blocked (the Service keeps the Pod source address)'
  )
})

t.test('a hand-written policy of the same name is untouched, and it is what filters', async (t) => {
  const policy = await getJson(cluster, ['networkpolicy', POLICY, '-n', 'tenant-c'])
  t.same(policy.spec, { podSelector: {}, policyTypes: ['Ingress'] }, 'its spec is as written')
  t.notOk(policy.metadata.labels?.['app.kubernetes.io/managed-by'], 'not labelled as ours')
  t.match(
    await settled(
      () => fromPod('a2', pods['c1']!.ip, 8080),
      (r) => !r.open
    ),
    blocked,
    'tenant-a Pod → tenant-c Pod: blocked'
  )
  t.match(
    await refusedByPolicy(() => probeFromOutside(pods['c1']!.ip, 8080)),
    dropped,
    'outside client → tenant-c Pod: blocked (no ingress at all)'
  )
  t.match(
    await refusedByPolicy(() => fromPod('c1', pods['a1']!.ip, 8080)),
    dropped,
    "tenant-c Pod → tenant-a Pod: blocked (by tenant-a's policy)"
  )
})

t.test('the Setting blanked: the policies collected and the traffic flows', async (t) => {
  const written = (await getJson(cluster, ['networkpolicy', POLICY, '-n', 'tenant-c'])).metadata.resourceVersion
  await setPodCidrs('')
  for (const ns of ['tenant-a', 'tenant-b']) {
    const left = await cluster.kubectl(['get', 'networkpolicy', POLICY, '-n', ns], { allowFail: true })
    t.match(left.stderr, /NotFound/, `${ns}: the policy is collected`)
  }
  t.equal(
    (await getJson(cluster, ['networkpolicy', POLICY, '-n', 'tenant-c'])).metadata.resourceVersion,
    written,
    'the hand-written one: not written'
  )
  t.match(
    await settled(
      () => fromPod('a1', pods['b1']!.ip, 8080),
      (r) => r.open
    ),
    answered('b1'),
    'tenant-a Pod → tenant-b Pod: flows'
  )
  t.match(await fromPod('b1', pods['a1']!.ip, 8080), answered('a1'), 'tenant-b Pod → tenant-a Pod: flows')
  t.match(
    await refusedByPolicy(() => fromPod('b1', pods['c1']!.ip, 8080)),
    dropped,
    'tenant-b Pod → tenant-c Pod: still blocked by the hand-written policy'
  )
})

t.test('the node leaves nothing on the machine', async (t) => {
  await stopOutsideServer()
  t.same(await env.node.stop(), [], 'every step of the stop succeeded')
  t.same(await env.node.leftovers(), [], 'no link, netns, iptables chain, ipset, mount or cgroup of the node is left')
})

/**
 * The chart's NetworkPolicies (docs/security.md, "The network"). The hook Pods': absent by
 * default, refused without the API server's addresses, and when on, selecting exactly the hook
 * Pods and admitting Metacontroller's Pods on the hooks port, the API server's addresses on the
 * webhook port, the listed metrics scrapers on the hooks port, and nothing else in or out. The
 * workload agent's: absent by default, refused without the API server's addresses, and when on,
 * letting the agent Pods reach the API server, the workload clusters listed and DNS, and nothing
 * else. What they admit is read with tests/support/netpol-eval.ts, the NetworkPolicy semantics
 * the isolation tests use, and their ports are checked against the Deployments'.
 */
import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { parseAllDocuments } from 'yaml'
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.d.ts'
import { CHART, cellPoolCapabilities } from '../../deploy/chart/generate.ts'
import { connectionAllowed, egressAllowed, ingressAllowed, type ClusterView, type Endpoint } from '../support/netpol-eval.ts'
import { findHelm } from '../support/tools.ts'

type Doc = { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: unknown }
type PodTemplate = {
  metadata: { labels: Record<string, string> }
  spec: { containers: Array<{ ports?: Array<{ name: string; containerPort: number }> }> }
}

const NS = 'gpuhooks-system'
const ENABLED = ['--set', 'networkPolicy.enabled=true', '--set', 'networkPolicy.apiServerCIDRs={10.0.0.10/32,192.168.7.0/24}']

const found = findHelm()
if ('skip' in found) {
  t.plan(0, found.skip)
} else {
  const helm = found.path
  const render = (args: string[]): { status: number | null; out: string; err: string } => {
    const r = spawnSync(helm, ['template', 'gpuhooks', CHART, '--namespace', NS, ...cellPoolCapabilities(), ...args], {
      encoding: 'utf8',
      maxBuffer: 64 << 20
    })
    return { status: r.status, out: r.stdout, err: r.stderr }
  }
  const docs = (args: string[]): Doc[] =>
    parseAllDocuments(
      execFileSync(helm, ['template', 'gpuhooks', CHART, '--namespace', NS, ...cellPoolCapabilities(), ...args], {
        encoding: 'utf8',
        maxBuffer: 64 << 20
      })
    )
      .map((d) => d.toJS() as Doc)
      .filter((d) => d !== null)
  const policiesOf = (all: Doc[]): NetworkPolicy[] => all.filter((d) => d.kind === 'NetworkPolicy') as unknown as NetworkPolicy[]
  const templateOf = (all: Doc[], name: string): PodTemplate =>
    (all.find((d) => d.kind === 'Deployment' && d.metadata.name === name) as unknown as { spec: { template: PodTemplate } }).spec.template

  /** The chart rendered with `args` and the monitoring namespace as metrics scrapers under `key`, and a Deployment's Pod labels. */
  const withScrapers = (args: string[], key: string) => {
    const all = docs([...args, '--set-json', `${key}=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`])
    return { all, labels: (name: string): Record<string, string> => templateOf(all, name).metadata.labels }
  }

  t.test('default values: no NetworkPolicy', async (t) => {
    t.strictSame(policiesOf(docs([])), [])
  })

  t.test('on without the API server addresses: the render fails and names the value', async (t) => {
    const r = render(['--set', 'networkPolicy.enabled=true'])
    t.not(r.status, 0)
    t.match(r.err, /networkPolicy\.apiServerCIDRs is required with networkPolicy\.enabled/)
    t.match(r.err, /every Instance and GPUCellPool write would be refused/)
  })

  t.test('helm lint passes with it on', async (t) => {
    const r = spawnSync(helm, ['lint', CHART, ...ENABLED], { encoding: 'utf8' })
    t.equal(r.status, 0, `${r.stdout}${r.stderr}`)
  })

  t.test('on: one policy of the hook Pods, as written', async (t) => {
    const all = docs(ENABLED)
    const policies = policiesOf(all)
    t.equal(policies.length, 1)
    const [policy] = policies
    t.strictSame(policy?.metadata?.name, 'gpuhooks')
    t.strictSame(policy?.metadata?.namespace, NS)
    t.strictSame(policy?.spec, {
      podSelector: {
        matchLabels: {
          'app.kubernetes.io/name': 'gpuhooks',
          'app.kubernetes.io/instance': 'gpuhooks',
          'app.kubernetes.io/component': 'hooks'
        }
      },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          ports: [{ protocol: 'TCP', port: 8080 }],
          from: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'metacontroller' } },
              podSelector: { matchLabels: { 'app.kubernetes.io/name': 'metacontroller' } }
            }
          ]
        },
        { ports: [{ protocol: 'TCP', port: 9443 }], from: [{ ipBlock: { cidr: '10.0.0.10/32' } }, { ipBlock: { cidr: '192.168.7.0/24' } }] }
      ],
      egress: []
    })
    // The ports are the hook container's: hooks (and probes, metrics) and admission.
    const ports = templateOf(all, 'gpuhooks').spec.containers.flatMap((c) => c.ports ?? [])
    t.strictSame(
      ports.map((p) => [p.name, p.containerPort]),
      [
        ['http', 8080],
        ['webhook', 9443]
      ]
    )
  })

  t.test('on: who reaches which port of a hook Pod, and that the hook Pods reach nothing', async (t) => {
    const { all, labels } = withScrapers(ENABLED, 'networkPolicy.metricsFrom')
    const cluster: ClusterView = {
      policies: policiesOf(all),
      namespaceLabels: Object.fromEntries(
        ['metacontroller', 'monitoring', 'tenant', NS].map((n) => [n, { 'kubernetes.io/metadata.name': n }])
      )
    }
    const hooks: Endpoint = { name: 'hook Pod', ip: '10.244.1.5', pod: { namespace: NS, labels: labels('gpuhooks') } }
    const agent: Endpoint = { name: 'agent Pod', ip: '10.244.1.6', pod: { namespace: NS, labels: labels('gpuhooks-agent') } }
    const pod = (name: string, namespace: string, podLabels: Record<string, string>, ip: string): Endpoint => ({
      name,
      ip,
      pod: { namespace, labels: podLabels }
    })
    const metacontroller = pod('Metacontroller', 'metacontroller', { 'app.kubernetes.io/name': 'metacontroller' }, '10.244.2.3')
    const sameNamespaceOther = pod('another Pod of Metacontroller’s namespace', 'metacontroller', { app: 'other' }, '10.244.2.4')
    const tenant = pod('a tenant Pod labelled like Metacontroller', 'tenant', { 'app.kubernetes.io/name': 'metacontroller' }, '10.244.3.9')
    const prometheus = pod('Prometheus', 'monitoring', { app: 'prometheus' }, '10.244.4.2')
    const apiServer: Endpoint = { name: 'the API server', ip: '10.0.0.10' }
    const controlPlane: Endpoint = { name: 'a control-plane address', ip: '192.168.7.20' }
    const outside: Endpoint = { name: 'an address outside the list', ip: '10.0.0.11' }
    const expected: Array<[Endpoint, number, boolean]> = [
      [metacontroller, 8080, true],
      [metacontroller, 9443, false],
      [prometheus, 8080, true],
      [prometheus, 9443, false],
      [apiServer, 9443, true],
      [controlPlane, 9443, true],
      [apiServer, 8080, false],
      [outside, 9443, false],
      [sameNamespaceOther, 8080, false],
      [tenant, 8080, false],
      [tenant, 9443, false],
      [agent, 8080, false]
    ]
    for (const [from, port, allowed] of expected) {
      t.equal(connectionAllowed(cluster, { from, to: hooks, port, protocol: 'TCP' }), allowed, `${from.name} → ${port}: ${allowed}`)
    }
    for (const to of [apiServer, metacontroller, { name: 'DNS', ip: '10.96.0.10' }]) {
      t.equal(connectionAllowed(cluster, { from: hooks, to, port: 443, protocol: 'TCP' }), false, `hook Pod → ${to.name}: refused`)
    }
    t.equal(connectionAllowed(cluster, { from: agent, to: apiServer, port: 443, protocol: 'TCP' }), true, 'the agent is not selected')
  })

  t.test("Metacontroller's selectors are values (its Helm chart's labels)", async (t) => {
    const [policy] = policiesOf(
      docs([
        ...ENABLED,
        '--set-json',
        'networkPolicy.metacontroller={"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"mc"}},"podSelector":{"matchLabels":{"app.kubernetes.io/name":"metacontroller-helm"}}}'
      ])
    )
    t.strictSame(policy?.spec?.ingress?.[0]?.from, [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'mc' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'metacontroller-helm' } }
      }
    ])
  })

  const AGENT = [
    '--set',
    'networkPolicy.agent.enabled=true',
    '--set',
    'networkPolicy.agent.apiServer.cidrs={10.0.0.10/32,10.0.0.11/32}',
    '--set-json',
    'networkPolicy.agent.workloadClusters=[{"to":[{"ipBlock":{"cidr":"192.0.2.0/28"}}],"ports":[{"protocol":"TCP","port":6443}]}]'
  ]

  t.test(
    "the agent's policy: off by default and without the hooks' own; refused without the API server or with a rule open to all",
    async (t) => {
      t.strictSame(
        policiesOf(docs(ENABLED)).map((p) => p.metadata?.name),
        ['gpuhooks'],
        "the hooks' policy alone"
      )
      const without = render(['--set', 'networkPolicy.agent.enabled=true'])
      t.not(without.status, 0)
      t.match(without.err, /networkPolicy\.agent\.apiServer\.cidrs is required with networkPolicy\.agent\.enabled/)
      const open = render([...AGENT, '--set-json', 'networkPolicy.agent.workloadClusters=[{"ports":[{"protocol":"TCP","port":443}]}]'])
      t.not(open.status, 0)
      t.match(open.err, /every entry needs both to and ports/)
      t.strictSame(
        policiesOf(docs(AGENT)).map((p) => p.metadata?.name),
        ['gpuhooks-agent'],
        'on alone, apart from the hooks'
      )
      const lint = spawnSync(helm, ['lint', CHART, ...AGENT], { encoding: 'utf8' })
      t.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`)
    }
  )

  t.test('on: the agent Pods reach the API server, the workload clusters listed and DNS, and nothing else', async (t) => {
    const { all, labels } = withScrapers(AGENT, 'networkPolicy.agent.metricsFrom')
    t.strictSame(
      templateOf(all, 'gpuhooks-agent')
        .spec.containers.flatMap((c) => c.ports ?? [])
        .map((p) => [p.name, p.containerPort]),
      [['http', 8081]],
      "the port the policy admits is the agent container's"
    )
    const cluster: ClusterView = {
      policies: policiesOf(all),
      namespaceLabels: Object.fromEntries(['kube-system', 'monitoring', 'tenant', NS].map((n) => [n, { 'kubernetes.io/metadata.name': n }]))
    }
    const agent: Endpoint = { name: 'agent Pod', ip: '10.244.1.6', pod: { namespace: NS, labels: labels('gpuhooks-agent') } }
    const hooks: Endpoint = { name: 'hook Pod', ip: '10.244.1.5', pod: { namespace: NS, labels: labels('gpuhooks') } }
    const dns: Endpoint = { name: 'CoreDNS', ip: '10.244.0.3', pod: { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } } }
    const tenantPod: Endpoint = { name: 'a tenant Pod', ip: '10.244.3.9', pod: { namespace: 'tenant', labels: { 'k8s-app': 'kube-dns' } } }
    const prometheus: Endpoint = { name: 'Prometheus', ip: '10.244.4.2', pod: { namespace: 'monitoring', labels: { app: 'prometheus' } } }
    const to = (name: string, ip: string): Endpoint => ({ name, ip })
    const out: Array<[Endpoint, number, 'TCP' | 'UDP', boolean]> = [
      [to('the API server', '10.0.0.10'), 6443, 'TCP', true],
      [to('another API server address', '10.0.0.11'), 6443, 'TCP', true],
      [to('the API server on another port', '10.0.0.10'), 10250, 'TCP', false],
      [to('a listed workload cluster', '192.0.2.10'), 6443, 'TCP', true],
      [to('a listed workload cluster on another port', '192.0.2.10'), 22, 'TCP', false],
      [to('a server a pool author names outside the list', '203.0.113.5'), 6443, 'TCP', false],
      [to('the cloud metadata service', '169.254.169.254'), 80, 'TCP', false],
      [dns, 53, 'UDP', true],
      [dns, 53, 'TCP', true],
      [dns, 8080, 'TCP', false],
      [tenantPod, 53, 'UDP', false],
      [hooks, 8080, 'TCP', false]
    ]
    for (const [target, port, protocol, allowed] of out) {
      t.equal(
        egressAllowed(cluster, { from: agent, to: target, port, protocol }),
        allowed,
        `agent → ${target.name}:${port}/${protocol}: ${allowed}`
      )
    }
    const into: Array<[Endpoint, number, boolean]> = [
      [prometheus, 8081, true],
      [tenantPod, 8081, false],
      [hooks, 8081, false]
    ]
    for (const [from, port, allowed] of into) {
      t.equal(ingressAllowed(cluster, { from, to: agent, port, protocol: 'TCP' }), allowed, `${from.name} → agent:${port}: ${allowed}`)
    }
    const quiet = docs(AGENT)
    t.strictSame(policiesOf(quiet)[0]?.spec?.ingress, [], 'no metrics scrapers listed: nothing in but from the node')
  })
}

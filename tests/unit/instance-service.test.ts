import t from 'tap'
import { buildService, observedNodePorts, runningPortIdentities, servicePortName, type ServiceInput } from '../../hooks/instance/service.ts'
import type { ResolvedPort } from '../../hooks/instance/ports.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { NAME, NS, observedService, type ObservedPort } from './fixtures/instance.ts'
import { reversedKeys } from '../support/fields.ts'

/** The hook's input for `ports`; `observed` lists the ports of the Service as the API server stores it. */
const input = (ports: ResolvedPort[], options: { stop?: boolean; ssh?: boolean; observed?: ObservedPort[] } = {}): ServiceInput => ({
  name: NAME,
  namespace: NS,
  spec: { ports, stop: options.stop ?? false },
  ssh: options.ssh ?? false,
  observed: options.observed === undefined ? undefined : observedService(options.observed)
})
/** The input of a stopped Instance with `ports` in its spec and the Service `observed`, if any. */
const stopped = (ports: ResolvedPort[], observed?: ObservedPort[], options: { ssh?: boolean } = {}): ServiceInput =>
  input(ports, { ...options, stop: true, ...(observed !== undefined ? { observed } : {}) })
const tcp = (port: number, name?: string): ResolvedPort =>
  name === undefined ? { port, protocol: 'TCP' } : { port, protocol: 'TCP', name }
const portsOf = (svc: KubeObject | undefined): unknown => (svc === undefined ? undefined : (svc.spec as { ports: unknown }).ports)

t.test('the Service is a NodePort Service named after the Instance with Local traffic policy and the part-of selector', async (t) => {
  t.strictSame(buildService(input([tcp(8888)])), {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: NAME, namespace: NS, labels: { 'app.kubernetes.io/part-of': NAME, 'app.kubernetes.io/managed-by': 'gpuhooks' } },
    spec: {
      type: 'NodePort',
      externalTrafficPolicy: 'Local',
      internalTrafficPolicy: 'Cluster',
      sessionAffinity: 'None',
      selector: { 'app.kubernetes.io/part-of': NAME, 'resource.gpustack.ai/type': 'instances' },
      ports: [{ name: 'tcp-8888', port: 8888, protocol: 'TCP', targetPort: 8888 }]
    }
  })
})

/** A Service port as the hook should render it: targetPort = port, and the node port it keeps, if any. */
const entry = (name: string, port: number, protocol: string, nodePort?: number): Record<string, unknown> => ({
  name,
  port,
  protocol,
  targetPort: port,
  ...(nodePort !== undefined ? { nodePort } : {})
})

const rows: Array<{ name: string; given: ServiceInput; expected: unknown }> = [
  {
    name: 'a running Instance exposes exactly spec.ports, named <protocol>-<port> with targetPort = port',
    given: input([tcp(8888, 'jupyter'), { port: 5353, protocol: 'UDP' }, { port: 9999, protocol: 'SCTP' }]),
    expected: [entry('tcp-8888', 8888, 'TCP'), entry('udp-5353', 5353, 'UDP'), entry('sctp-9999', 9999, 'SCTP')]
  },
  {
    name: 'the user port name never names the Service port',
    given: input([tcp(80, 'web')]),
    expected: [entry('tcp-80', 80, 'TCP')]
  },
  {
    name: 'SSH on adds ssh 22/TCP after the spec ports',
    given: input([tcp(8888)], { ssh: true }),
    expected: [entry('tcp-8888', 8888, 'TCP'), entry('ssh', 22, 'TCP')]
  },
  {
    name: 'a spec entry 22/TCP with SSH on is the one ssh entry',
    given: input([tcp(22, 'shell'), tcp(8888)], { ssh: true }),
    expected: [entry('tcp-8888', 8888, 'TCP'), entry('ssh', 22, 'TCP')]
  },
  {
    name: 'without SSH a spec entry 22/TCP is an ordinary port',
    given: input([tcp(22)]),
    expected: [entry('tcp-22', 22, 'TCP')]
  },
  {
    name: 'SSH alone makes a Service with the ssh port only',
    given: input([], { ssh: true }),
    expected: [entry('ssh', 22, 'TCP')]
  },
  {
    name: 'an unchanged port keeps the node port of the observed Service',
    given: input([tcp(8888), tcp(6006)], {
      observed: [
        { port: 8888, nodePort: 31001 },
        { port: 6006, nodePort: 31002 }
      ]
    }),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001), entry('tcp-6006', 6006, 'TCP', 31002)]
  },
  {
    name: 'node ports are found by (port, protocol), not by name',
    given: input([tcp(8888)], { observed: [{ port: 8888, name: 'renamed-by-hand', nodePort: 31001 }] }),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001)]
  },
  {
    name: 'a port whose protocol changed is a new port and carries no node port',
    given: input([{ port: 8888, protocol: 'UDP' }], { observed: [{ port: 8888, nodePort: 31001 }] }),
    expected: [entry('udp-8888', 8888, 'UDP')]
  },
  {
    name: 'a port added while running is left for the API server to allocate',
    given: input([tcp(8888), tcp(7000)], { observed: [{ port: 8888, nodePort: 31001 }] }),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001), entry('tcp-7000', 7000, 'TCP')]
  },
  {
    name: 'a port removed from spec.ports is dropped from the Service',
    given: input([tcp(8888)], {
      observed: [
        { port: 8888, nodePort: 31001 },
        { port: 6006, nodePort: 31002 }
      ]
    }),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001)]
  },
  {
    name: 'the ssh entry keeps its node port',
    given: input([], { ssh: true, observed: [{ port: 22, name: 'ssh', nodePort: 30022 }] }),
    expected: [entry('ssh', 22, 'TCP', 30022)]
  },
  {
    name: 'running with no ports and no SSH means no Service',
    given: input([], { observed: [{ port: 8888, nodePort: 31001 }] }),
    expected: undefined
  },
  {
    name: 'stopped, the Service is rendered from the observed ports and node ports whatever spec.ports says',
    given: stopped(
      [tcp(9000)],
      [
        { port: 8888, nodePort: 31001 },
        { port: 5353, protocol: 'UDP', nodePort: 31002 }
      ]
    ),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001), entry('udp-5353', 5353, 'UDP', 31002)]
  },
  {
    name: 'stopped with spec.ports cleared, the Service stays',
    given: stopped([], [{ port: 8888, nodePort: 31001 }]),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001)]
  },
  {
    name: 'stopped, an observed ssh entry stays ssh even when SSH was turned off',
    given: stopped(
      [],
      [
        { port: 8888, nodePort: 31001 },
        { port: 22, name: 'ssh', nodePort: 30022 }
      ],
      { ssh: false }
    ),
    expected: [entry('tcp-8888', 8888, 'TCP', 31001), entry('ssh', 22, 'TCP', 30022)]
  },
  {
    name: 'stopped with no Service observed, none is made',
    given: stopped([tcp(8888)]),
    expected: undefined
  }
]

for (const row of rows) {
  t.test(row.name, async (t) => {
    t.strictSame(portsOf(buildService(row.given)), row.expected)
  })
}

t.test('servicePortName follows the identity', async (t) => {
  const cases: Array<{ name: string; given: [number, string, boolean]; expected: string }> = [
    { name: 'tcp', given: [8888, 'TCP', false], expected: 'tcp-8888' },
    { name: 'udp', given: [53, 'UDP', false], expected: 'udp-53' },
    { name: 'sctp', given: [65535, 'SCTP', false], expected: 'sctp-65535' },
    { name: 'ssh', given: [22, 'TCP', true], expected: 'ssh' }
  ]
  for (const c of cases) t.equal(servicePortName(...c.given), c.expected, c.name)
})

t.test('observedNodePorts reads node ports by identity and treats a missing protocol as TCP', async (t) => {
  const svc = observedService([
    { port: 8888, nodePort: 31001 },
    { port: 53, protocol: 'UDP', nodePort: 31002 }
  ])
  ;((svc.spec as { ports: Array<Record<string, unknown>> }).ports[0] as Record<string, unknown>).protocol = undefined
  t.strictSame(
    [...observedNodePorts(svc)],
    [
      ['8888/TCP', 31001],
      ['53/UDP', 31002]
    ]
  )
  t.strictSame([...observedNodePorts(undefined)], [])
})

t.test('runningPortIdentities lists a duplicated identity once', async (t) => {
  t.strictSame(runningPortIdentities([tcp(80), tcp(80)], false), [{ port: 80, protocol: 'TCP', ssh: false }])
})

t.test('the rendered bytes do not depend on the key order of the input', async (t) => {
  const given = input([tcp(8888), { port: 53, protocol: 'UDP' }], {
    ssh: true,
    observed: [{ port: 8888, nodePort: 31001 }]
  })
  const reordered = reversedKeys(given)
  t.not(JSON.stringify(reordered), JSON.stringify(given), 'the two inputs differ in key order')
  t.equal(JSON.stringify(buildService(reordered)), JSON.stringify(buildService(given)))
})

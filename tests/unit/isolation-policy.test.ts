import t from 'tap'
import { buildPolicy, policyDrift } from '../../hooks/isolation/policy.ts'
import type { PodCidrs } from '../../hooks/isolation/cidrs.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'

const metadata = {
  labels: { 'app.kubernetes.io/managed-by': 'gpuhooks' },
  name: 'gpustack-instance-isolation',
  namespace: 'tenant-a'
}
const dns = {
  ports: [
    { port: 53, protocol: 'UDP' },
    { port: 53, protocol: 'TCP' }
  ]
}
const instancePods = { matchLabels: { 'resource.gpustack.ai/type': 'instances' } }

const buildCases: Array<{ name: string; given: { namespace: string; cidrs: PodCidrs }; expected: unknown }> = [
  {
    name: 'a dual-stack setting renders one ipBlock per family, IPv4 first',
    given: { namespace: 'tenant-a', cidrs: { ipv4: ['10.1.0.0/16', '10.244.0.0/16'], ipv6: ['fd00:10:244::/56'] } },
    expected: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata,
      spec: {
        egress: [
          {
            to: [
              { podSelector: {} },
              { ipBlock: { cidr: '0.0.0.0/0', except: ['10.1.0.0/16', '10.244.0.0/16'] } },
              { ipBlock: { cidr: '::/0', except: ['fd00:10:244::/56'] } }
            ]
          },
          dns
        ],
        ingress: [
          {
            from: [
              { podSelector: {} },
              { ipBlock: { cidr: '0.0.0.0/0', except: ['10.1.0.0/16', '10.244.0.0/16'] } },
              { ipBlock: { cidr: '::/0', except: ['fd00:10:244::/56'] } }
            ]
          }
        ],
        podSelector: instancePods,
        policyTypes: ['Ingress', 'Egress']
      }
    }
  },
  {
    name: 'only IPv4 CIDRs on a dual-stack cluster opens nothing over IPv6',
    given: { namespace: 'tenant-a', cidrs: { ipv4: ['10.244.0.0/16'], ipv6: [] } },
    expected: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata,
      spec: {
        egress: [{ to: [{ podSelector: {} }, { ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] } }] }, dns],
        ingress: [{ from: [{ podSelector: {} }, { ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] } }] }],
        podSelector: instancePods,
        policyTypes: ['Ingress', 'Egress']
      }
    }
  },
  {
    name: 'only IPv6 CIDRs opens nothing over IPv4',
    given: { namespace: 'tenant-b', cidrs: { ipv4: [], ipv6: ['fd00::/8'] } },
    expected: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { ...metadata, namespace: 'tenant-b' },
      spec: {
        egress: [{ to: [{ podSelector: {} }, { ipBlock: { cidr: '::/0', except: ['fd00::/8'] } }] }, dns],
        ingress: [{ from: [{ podSelector: {} }, { ipBlock: { cidr: '::/0', except: ['fd00::/8'] } }] }],
        podSelector: instancePods,
        policyTypes: ['Ingress', 'Egress']
      }
    }
  }
]

for (const c of buildCases) {
  t.test(c.name, async (t) => {
    const policy = buildPolicy(c.given.namespace, c.given.cidrs)
    t.strictSame(policy, c.expected)
    // Key order is part of the byte-for-byte promise: sorted at every depth.
    t.equal(JSON.stringify(policy), JSON.stringify(sortKeys(c.expected)))
  })
}

t.test('every port entry carries its protocol, which the API server would otherwise default', async (t) => {
  const policy = buildPolicy('tenant-a', { ipv4: ['10.244.0.0/16'], ipv6: ['fd00::/8'] })
  const rules = [...(policy.spec.ingress ?? []), ...(policy.spec.egress ?? [])]
  const ports = rules.flatMap((rule) => rule.ports ?? [])
  t.equal(ports.length, 2)
  t.ok(ports.every((port) => port.protocol === 'UDP' || port.protocol === 'TCP'))
})

t.test('the policy shares no structure with its input or between directions', async (t) => {
  const cidrs = { ipv4: ['10.244.0.0/16'], ipv6: [] }
  const policy = buildPolicy('tenant-a', cidrs)
  cidrs.ipv4.push('10.9.0.0/16')
  const egressPeers = policy.spec.egress?.[0]?.to
  const ingressPeers = policy.spec.ingress?.[0]?.from
  t.same(ingressPeers?.[1]?.ipBlock?.except, ['10.244.0.0/16'])
  t.not(egressPeers, ingressPeers)
})

const rendered = buildPolicy('tenant-a', { ipv4: ['10.244.0.0/16'], ipv6: [] })

function observedWith(spec: Record<string, unknown>): KubeObject {
  return { ...structuredClone(rendered), spec: { ...structuredClone(rendered.spec), ...spec } }
}

const driftCases: Array<{ name: string; given: KubeObject | undefined; expected: string[] }> = [
  { name: 'no observed policy has no drift', given: undefined, expected: [] },
  { name: 'the rendered policy as observed has no drift', given: observedWith({}), expected: [] },
  {
    name: 'drift in a field the hook never renders is reported',
    given: observedWith({
      podSelector: {
        matchLabels: { 'resource.gpustack.ai/type': 'instances' },
        matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold'] }]
      }
    }),
    expected: ['spec.podSelector.matchExpressions']
  },
  {
    name: 'a hand-added selector label is reported with its key quoted',
    given: observedWith({
      podSelector: { matchLabels: { 'resource.gpustack.ai/type': 'instances', 'app.kubernetes.io/name': 'x', team: 'a' } }
    }),
    expected: ['spec.podSelector.matchLabels.team', 'spec.podSelector.matchLabels["app.kubernetes.io/name"]']
  },
  {
    name: 'a manual edit inside a rendered rule list is reverted by the merge, not reported',
    given: observedWith({ ingress: [{ from: [{ namespaceSelector: {} }] }], egress: [] }),
    expected: []
  },
  {
    name: 'a changed value of a rendered field is reverted by the merge, not reported',
    given: observedWith({ podSelector: { matchLabels: { 'resource.gpustack.ai/type': 'everything' } } }),
    expected: []
  },
  {
    name: 'a spec field the hook never renders is reported',
    given: observedWith({ futureField: { enabled: true } }),
    expected: ['spec.futureField']
  }
]

for (const c of driftCases) {
  t.test(c.name, async (t) => {
    t.same(policyDrift(c.given, rendered), c.expected)
  })
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  return Object.fromEntries(
    Object.keys(record)
      .sort()
      .map((k) => [k, sortKeys(record[k])])
  )
}

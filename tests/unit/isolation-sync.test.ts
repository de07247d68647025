import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { IsolationSyncRequestSchema, sync, type IsolationSyncRequest } from '../../hooks/isolation/sync.ts'
import { customize, IsolationCustomizeRequestSchema } from '../../hooks/isolation/customize.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'

const NS = 'tenant-a'
const POLICY_KEY = 'NetworkPolicy.networking.k8s.io/v1'
const ANNOTATION = 'gpustack.ai/instance-isolation'
const DECORATOR = 'gpuhooks-instance-isolation'

/**
 * The policy for `cidrs` in tenant-a, written out from isolation.md: Instance Pods talk to their
 * own namespace and to everything outside the pod networks, plus DNS; one ipBlock per family in use.
 */
function expectedPolicy(cidrs: { ipv4: string[]; ipv6: string[] }): KubeObject {
  const blocks = [
    ...(cidrs.ipv4.length > 0 ? [{ ipBlock: { cidr: '0.0.0.0/0', except: cidrs.ipv4 } }] : []),
    ...(cidrs.ipv6.length > 0 ? [{ ipBlock: { cidr: '::/0', except: cidrs.ipv6 } }] : [])
  ]
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { labels: { 'app.kubernetes.io/managed-by': 'gpuhooks' }, name: 'gpustack-instance-isolation', namespace: NS },
    spec: {
      egress: [
        { to: [{ podSelector: {} }, ...blocks] },
        {
          ports: [
            { port: 53, protocol: 'UDP' },
            { port: 53, protocol: 'TCP' }
          ]
        }
      ],
      ingress: [{ from: [{ podSelector: {} }, ...blocks] }],
      podSelector: { matchLabels: { 'resource.gpustack.ai/type': 'instances' } },
      policyTypes: ['Ingress', 'Egress']
    }
  }
}

/** A policy as Metacontroller observes it after applying `desired`: record, owner, server fields. */
function stored(desired: KubeObject): KubeObject {
  const applied = structuredClone(desired)
  applied.metadata.annotations = { ...applied.metadata.annotations, 'metacontroller.k8s.io/decorator-controller': DECORATOR }
  const observed = structuredClone(applied)
  observed.metadata = {
    ...observed.metadata,
    annotations: {
      ...applied.metadata.annotations,
      'metacontroller.k8s.io/last-applied-configuration': JSON.stringify(applied)
    },
    uid: '6f1c1c3e-0000-4000-8000-000000000001',
    resourceVersion: '4242',
    generation: 1,
    creationTimestamp: '2025-01-01T00:00:00Z',
    ownerReferences: [
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        name: String(desired.metadata.namespace),
        uid: 'ns-uid',
        controller: true,
        blockOwnerDeletion: true
      }
    ],
    managedFields: [{ manager: 'metacontroller', operation: 'Update', apiVersion: 'networking.k8s.io/v1' }]
  }
  return observed
}

/** What `stored` recorded as last applied, i.e. what keeping a policy as it is must answer. */
function recorded(observed: KubeObject): KubeObject {
  return JSON.parse(String(observed.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration'])) as KubeObject
}

const v4 = { ipv4: ['10.244.0.0/16'], ipv6: [] }
const dual = { ipv4: ['10.244.0.0/16'], ipv6: ['fd00:10:244::/56'] }
const oldPolicy = stored(expectedPolicy({ ipv4: ['10.0.0.0/8'], ipv6: [] }))
const currentPolicy = stored(expectedPolicy(v4))
const strayPolicy = stored({ ...expectedPolicy(v4), metadata: { ...expectedPolicy(v4).metadata, name: 'older-name' } })
const handNarrowed = (() => {
  const p = stored(expectedPolicy(v4))
  ;(p.spec as { podSelector: Record<string, unknown> }).podSelector.matchExpressions = [{ key: 'tier', operator: 'In', values: ['gold'] }]
  return p
})()
const handEditedRules = (() => {
  const p = stored(expectedPolicy(v4))
  ;(p.spec as { ingress: unknown[] }).ingress = [{}]
  return p
})()

interface Given {
  setting?: string | null
  instanceNamespaces?: string[]
  policies?: KubeObject[]
  namespace?: Record<string, unknown>
}

function request(given: Given): IsolationSyncRequest {
  const instances: Record<string, KubeObject> = {}
  for (const [i, ns] of (given.instanceNamespaces ?? []).entries()) {
    instances[`${ns}/inst-${i}`] = {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'Instance',
      metadata: { name: `inst-${i}`, namespace: ns }
    }
  }
  const settings: Record<string, KubeObject> = {}
  if (given.setting !== null && given.setting !== undefined) {
    settings['instance-isolation-pod-cidrs'] = {
      apiVersion: 'gpustack.ai/v1alpha1',
      kind: 'Setting',
      metadata: { name: 'instance-isolation-pod-cidrs' },
      value: given.setting
    }
  }
  const policies: Record<string, KubeObject> = {}
  for (const p of given.policies ?? []) policies[`${p.metadata.namespace}/${p.metadata.name}`] = structuredClone(p)
  const body = {
    controller: { kind: 'DecoratorController', metadata: { name: DECORATOR } },
    object: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, uid: 'ns-uid', labels: { 'kubernetes.io/metadata.name': NS } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
      ...given.namespace
    },
    attachments: { [POLICY_KEY]: policies },
    related: { 'Setting.gpustack.ai/v1alpha1': settings, 'Instance.worker.gpustack.ai/v1alpha1': instances },
    finalizing: false
  }
  if (!Value.Check(IsolationSyncRequestSchema, body)) throw new Error('fixture does not fit the request schema')
  return body
}

const deleting = {
  metadata: { name: NS, uid: 'ns-uid', deletionTimestamp: '2025-01-02T00:00:00Z' },
  status: { phase: 'Terminating' }
}
/** The label a sync that sees an Instance answers (isolation.md, "Inputs"). */
const HOLDS = { 'gpustack.ai/holds-instances': 'true' }
/** The namespace's own metadata with `labels` added. */
const labelled = (labels: Record<string, string>) => ({
  metadata: { name: NS, uid: 'ns-uid', labels: { 'kubernetes.io/metadata.name': NS, ...labels } }
})
const errorPrefix = 'error: Setting instance-isolation-pod-cidrs has an invalid value, so no policy was changed: '

/** A sync answer as the tests spell it out. */
interface Expected {
  attachments: unknown[]
  labels: Record<string, string>
  annotations: Record<string, string | null>
  status: null
}

/** The answer when the Setting does not parse: `attachments` as observed, the holds label, and the annotation saying `why`. */
const refused = (attachments: unknown[], why: string): Expected => ({
  attachments,
  annotations: { [ANNOTATION]: errorPrefix + why },
  labels: HOLDS,
  status: null
})
/** The error for entry `n`, `value`, which is no CIDR at all. */
const notACidr = (n: number, value: string): string =>
  `entry ${n} "${value}" is not an IPv4 or IPv6 CIDR (like 10.244.0.0/16 or fd00:10:244::/56)`

const cases: Array<{ name: string; given: Given; expected: Expected }> = [
  {
    name: 'a blank setting renders no policy',
    given: { setting: '', instanceNamespaces: [NS] },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'an absent setting renders no policy',
    given: { setting: null, instanceNamespaces: [NS] },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'a namespace that holds an Instance gets the policy',
    given: { setting: '10.244.0.0/16', instanceNamespaces: [NS] },
    expected: {
      attachments: [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { labels: { 'app.kubernetes.io/managed-by': 'gpuhooks' }, name: 'gpustack-instance-isolation', namespace: NS },
          spec: {
            egress: [
              { to: [{ podSelector: {} }, { ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] } }] },
              {
                ports: [
                  { port: 53, protocol: 'UDP' },
                  { port: 53, protocol: 'TCP' }
                ]
              }
            ],
            ingress: [{ from: [{ podSelector: {} }, { ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] } }] }],
            podSelector: { matchLabels: { 'resource.gpustack.ai/type': 'instances' } },
            policyTypes: ['Ingress', 'Egress']
          }
        }
      ],
      annotations: { [ANNOTATION]: null },
      labels: HOLDS,
      status: null
    }
  },
  {
    name: 'a namespace without Instances gets no policy',
    given: { setting: '10.244.0.0/16' },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: {}, status: null }
  },
  {
    name: 'an Instance of another namespace does not count',
    given: { setting: '10.244.0.0/16', instanceNamespaces: ['tenant-b'] },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: {}, status: null }
  },
  {
    name: 'deleting the last instance keeps the policy',
    given: { setting: '10.244.0.0/16', policies: [currentPolicy] },
    expected: { attachments: [expectedPolicy(v4)], annotations: { [ANNOTATION]: null }, labels: {}, status: null }
  },
  {
    name: "emptying the setting collects the decorator's policy",
    given: { setting: ' ', instanceNamespaces: [NS], policies: [currentPolicy] },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: "deleting the setting collects the decorator's policy",
    given: { setting: null, instanceNamespaces: [NS], policies: [currentPolicy] },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'a changed setting rewrites the policy with the new CIDRs',
    given: { setting: 'fd00:10:244::/56,10.244.0.0/16', instanceNamespaces: [NS], policies: [oldPolicy] },
    expected: { attachments: [expectedPolicy(dual)], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'an unparseable value changes nothing and says why in the annotation',
    given: { setting: '10.244.0.1/16,pods', instanceNamespaces: [NS], policies: [oldPolicy] },
    expected: refused(
      [recorded(oldPolicy)],
      'entry 1 "10.244.0.1/16" has bits set beyond the prefix length; write 10.244.0.0/16; ' + notACidr(2, 'pods')
    )
  },
  {
    name: 'an unparseable value renders no policy where none exists',
    given: { setting: '10.244.0.0/16,', instanceNamespaces: [NS] },
    expected: refused([], 'entry 2 "" is empty; remove the extra comma')
  },
  {
    name: 'an unparseable value keeps the decorator policy and collects an attachment of another name',
    given: { setting: 'x', instanceNamespaces: [NS], policies: [currentPolicy, strayPolicy] },
    expected: refused([recorded(currentPolicy)], notACidr(1, 'x'))
  },
  {
    name: 'an error report names the first ten bad entries and counts the rest',
    given: { setting: Array.from({ length: 12 }, (_, i) => `x${i}`).join(','), instanceNamespaces: [NS] },
    expected: refused([], Array.from({ length: 10 }, (_, i) => notACidr(i + 1, `x${i}`)).join('; ') + '; and 2 more bad entries')
  },
  {
    name: 'a valid value collects an attachment of another name',
    given: { setting: '10.244.0.0/16', instanceNamespaces: [NS], policies: [currentPolicy, strayPolicy] },
    expected: { attachments: [expectedPolicy(v4)], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'a terminating namespace keeps its policy',
    given: { setting: '', namespace: deleting, policies: [currentPolicy] },
    expected: { attachments: [recorded(currentPolicy)], annotations: {}, labels: {}, status: null }
  },
  {
    name: 'a namespace whose status says Terminating keeps its policy',
    given: { setting: '10.9.0.0/16', namespace: { status: { phase: 'Terminating' } }, policies: [currentPolicy] },
    expected: { attachments: [recorded(currentPolicy)], annotations: {}, labels: {}, status: null }
  },
  {
    name: 'a terminating namespace without a policy gets none',
    given: { setting: '10.244.0.0/16', instanceNamespaces: [NS], namespace: deleting },
    expected: { attachments: [], annotations: {}, labels: {}, status: null }
  },
  {
    name: 'drift in a field the hook never renders is reported',
    given: { setting: '10.244.0.0/16', instanceNamespaces: [NS], policies: [handNarrowed] },
    expected: {
      attachments: [expectedPolicy(v4)],
      annotations: { [ANNOTATION]: 'drift: spec.podSelector.matchExpressions' },
      labels: HOLDS,
      status: null
    }
  },
  {
    name: 'a manual edit of a rendered rule is rewritten, not reported',
    given: { setting: '10.244.0.0/16', instanceNamespaces: [NS], policies: [handEditedRules] },
    expected: { attachments: [expectedPolicy(v4)], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'a labelled namespace gets the policy though its sync carries no Instances',
    given: { setting: '10.244.0.0/16', namespace: labelled(HOLDS) },
    expected: { attachments: [expectedPolicy(v4)], annotations: { [ANNOTATION]: null }, labels: {}, status: null }
  },
  {
    name: 'a label of another value does not count',
    given: { setting: '10.244.0.0/16', namespace: labelled({ 'gpustack.ai/holds-instances': 'True' }) },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: {}, status: null }
  },
  {
    name: 'a labelled namespace gets no policy while the setting is blank, and keeps its label',
    given: { setting: '', namespace: labelled(HOLDS) },
    expected: { attachments: [], annotations: { [ANNOTATION]: null }, labels: {}, status: null }
  },
  {
    name: 'a namespace that lost its label gets it back from the next sync that sees an Instance',
    given: { setting: '10.244.0.0/16', instanceNamespaces: [NS], policies: [currentPolicy], namespace: labelled({}) },
    expected: { attachments: [expectedPolicy(v4)], annotations: { [ANNOTATION]: null }, labels: HOLDS, status: null }
  },
  {
    name: 'an Instance is labelled for whatever the setting says, even when it is unparseable',
    given: { setting: 'pods', instanceNamespaces: [NS] },
    expected: refused([], notACidr(1, 'pods'))
  }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    const answer = sync(request(c.given))
    t.strictSame(answer, c.expected)
  })
}

t.test('the answer never carries a namespace status, and no label but the one it sets', async (t) => {
  for (const c of cases) {
    const answer = sync(request(c.given))
    t.same(Object.keys(answer).sort(), ['annotations', 'attachments', 'labels', 'status'], c.name)
    t.equal(answer.status, null, c.name)
    // Never null: the hook never removes the label, whoever set it.
    t.ok(
      Object.entries(answer.labels ?? {}).every(([k, v]) => k === 'gpustack.ai/holds-instances' && v === 'true'),
      c.name
    )
  }
})

t.test('only the declared attachment type appears in the answer', async (t) => {
  for (const c of cases) {
    for (const attachment of sync(request(c.given)).attachments) {
      t.equal(`${attachment.kind}.${attachment.apiVersion}`, POLICY_KEY, c.name)
      t.equal(attachment.metadata.namespace, NS, c.name)
    }
  }
})

t.test('the request is not modified', async (t) => {
  const given = request({ setting: '10.244.0.0/16', instanceNamespaces: [NS], policies: [handNarrowed, strayPolicy] })
  const before = structuredClone(given)
  sync(given)
  t.strictSame(given, before)
})

t.test('a Setting value that is not a string is reported in the annotation and every policy is kept', async (t) => {
  const body = request({ setting: '10.244.0.0/16', policies: [currentPolicy] }) as unknown as {
    related: Record<string, Record<string, Record<string, unknown>>>
  }
  const setting = body.related['Setting.gpustack.ai/v1alpha1']?.['instance-isolation-pod-cidrs']
  if (setting === undefined) throw new Error('fixture lost its Setting')
  setting.value = 42
  t.ok(Value.Check(IsolationSyncRequestSchema, body), 'the request is accepted: the problem is the Setting, not the call')
  const answer = sync(body as unknown as IsolationSyncRequest)
  t.strictSame(answer.attachments, [recorded(currentPolicy)])
  t.equal(
    answer.annotations?.[ANNOTATION],
    'error: Setting instance-isolation-pod-cidrs has an invalid value, so no policy was changed: the value must be a string of comma-separated CIDRs, not number'
  )
})

t.test("customize relates the namespace's Instances and the Setting by name", async (t) => {
  const body = { controller: {}, parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-b' } } }
  t.ok(Value.Check(IsolationCustomizeRequestSchema, body))
  t.strictSame(customize(body), {
    relatedResources: [
      { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'tenant-b' },
      { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', names: ['instance-isolation-pod-cidrs'] }
    ]
  })
})

t.test('customize relates only the Setting for a namespace labelled as holding Instances', async (t) => {
  const body = { controller: {}, parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-b', labels: HOLDS } } }
  t.ok(Value.Check(IsolationCustomizeRequestSchema, body))
  t.strictSame(customize(body), {
    relatedResources: [{ apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', names: ['instance-isolation-pod-cidrs'] }]
  })
})

t.test('customize still relates the Instances when the label has another value', async (t) => {
  const body = {
    controller: {},
    parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-b', labels: { 'gpustack.ai/holds-instances': 'false' } } }
  }
  t.strictSame(customize(body), {
    relatedResources: [
      { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'tenant-b' },
      { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', names: ['instance-isolation-pod-cidrs'] }
    ]
  })
})

t.test('a customize request without a namespace name fails the schema', async (t) => {
  t.notOk(Value.Check(IsolationCustomizeRequestSchema, { parent: { metadata: {} } }))
})

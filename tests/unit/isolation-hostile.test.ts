/**
 * The isolation decorator with hostile names: a namespace named after a prototype member, hand
 * edits under such names, and Setting maps holding them.
 */
import t from 'tap'
import { buildPolicy, policyDrift } from '../../hooks/isolation/policy.ts'
import { sync, type IsolationSyncRequest } from '../../hooks/isolation/sync.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'

const POLICY_KEY = 'NetworkPolicy.networking.k8s.io/v1'
const SETTING_KEY = 'Setting.gpustack.ai/v1alpha1'
const INSTANCE_KEY = 'Instance.worker.gpustack.ai/v1alpha1'
const ANNOTATION = 'gpustack.ai/instance-isolation'
const v4 = { ipv4: ['10.244.0.0/16'], ipv6: [] }

function request(namespace: string, settings: Record<string, unknown>, instances: Record<string, unknown>): IsolationSyncRequest {
  return {
    object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    attachments: { [POLICY_KEY]: {} },
    related: { [SETTING_KEY]: settings, [INSTANCE_KEY]: instances }
  } as unknown as IsolationSyncRequest
}

const cidrs = (value: string): Record<string, unknown> => ({
  'instance-isolation-pod-cidrs': { metadata: { name: 'instance-isolation-pod-cidrs' }, value }
})

t.test('a namespace named constructor holding an Instance gets its policy', async (t) => {
  const answer = sync(
    request('constructor', cidrs('10.244.0.0/16'), { 'constructor/box': { metadata: { name: 'box', namespace: 'constructor' } } })
  )
  t.strictSame(answer.attachments, [buildPolicy('constructor', v4)])
})

t.test('a namespace named constructor without Instances gets none', async (t) => {
  const answer = sync(request('constructor', cidrs('10.244.0.0/16'), {}))
  t.strictSame(answer.attachments, [])
})

t.test('Setting maps keyed by prototype names are no Setting', async (t) => {
  for (const key of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const settings = JSON.parse(`{${JSON.stringify(key)}: {"metadata": {"name": "x"}, "value": "10.0.0.0/8"}}`) as Record<string, unknown>
    const answer = sync(request('tenant', settings, { 'tenant/box': { metadata: { name: 'box', namespace: 'tenant' } } }))
    t.strictSame(
      answer,
      { attachments: [], labels: { 'gpustack.ai/holds-instances': 'true' }, annotations: { [ANNOTATION]: null }, status: null },
      key
    )
  }
})

t.test('hand-added fields named after prototype members are drift', async (t) => {
  const rendered = buildPolicy('tenant', v4)
  const observed = structuredClone(rendered) as KubeObject & {
    spec: Record<string, unknown> & { podSelector: { matchLabels: Record<string, string> } }
  }
  const own = (target: object, key: string, value: unknown): void => {
    Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true })
  }
  own(observed.spec.podSelector.matchLabels, 'constructor', 'x')
  own(observed.spec, 'toString', 'y')
  own(observed.spec, '__proto__', { a: 1 })
  t.strictSame(policyDrift(observed, rendered), ['spec.__proto__', 'spec.podSelector.matchLabels.constructor', 'spec.toString'])
})

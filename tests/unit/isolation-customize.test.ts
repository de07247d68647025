/**
 * The isolation customize answer for Namespaces as the API server stores them (with
 * `kubernetes.io/metadata.name`): the namespace's Instances are related through a Namespace
 * selector that stops matching the moment the Namespace carries `gpustack.ai/holds-instances:
 * "true"`, whatever answer Metacontroller keeps cached. The selector is evaluated here with the
 * cluster driver's label-selector matcher, which follows Kubernetes' own rules.
 */
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { customize } from '../../hooks/isolation/customize.ts'
import { CustomizeResponseSchema, type RelatedResourceRule } from '../../hooks/metacontroller/schemas.ts'
import { selectorMatches } from '../cluster/support/kube.ts'

const SETTING_RULE = { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', names: ['instance-isolation-pod-cidrs'] }

/** A Namespace as the API server stores it: it always carries its name as a label. */
function storedNamespace(name: string, labels: Record<string, string> = {}) {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } } }
}

const instancesRule = (answer: { relatedResources: RelatedResourceRule[] }): RelatedResourceRule | undefined =>
  answer.relatedResources.find((r) => r.resource === 'instances')

t.test('an unlabelled namespace relates its Instances by a Namespace selector, and the Setting', async (t) => {
  const answer = customize({ controller: {}, parent: storedNamespace('tenant-b') })
  t.strictSame(answer, {
    relatedResources: [
      {
        apiVersion: 'worker.gpustack.ai/v1alpha1',
        resource: 'instances',
        labelSelector: {},
        namespaceSelector: {
          matchLabels: { 'kubernetes.io/metadata.name': 'tenant-b' },
          matchExpressions: [{ key: 'gpustack.ai/holds-instances', operator: 'NotIn', values: ['true'] }]
        }
      },
      SETTING_RULE
    ]
  })
  t.ok(Value.Check(CustomizeResponseSchema, answer), 'the answer fits the response schema')
})

t.test('the selector matches this namespace until it carries the label, and again once the label is gone', async (t) => {
  const rule = instancesRule(customize({ controller: {}, parent: storedNamespace('tenant-b') }))
  const matches = (labels: Record<string, string>) => selectorMatches(rule?.namespaceSelector, labels)
  t.ok(matches(storedNamespace('tenant-b').metadata.labels), 'tenant-b as it was when customize answered')
  t.notOk(matches(storedNamespace('tenant-b', { 'gpustack.ai/holds-instances': 'true' }).metadata.labels), 'labelled: nothing related')
  t.ok(matches(storedNamespace('tenant-b', { 'gpustack.ai/holds-instances': 'false' }).metadata.labels), 'another value counts as none')
  t.notOk(matches(storedNamespace('tenant-c').metadata.labels), 'another namespace: never')
  t.ok(selectorMatches(rule?.labelSelector, { app: 'anything' }), 'every Instance of the namespace, whatever its labels')
})

t.test('a namespace labelled with another value still relates its Instances by the selector', async (t) => {
  const answer = customize({ controller: {}, parent: storedNamespace('tenant-b', { 'gpustack.ai/holds-instances': 'false' }) })
  t.ok(instancesRule(answer)?.namespaceSelector !== undefined)
})

t.test('a labelled namespace relates only the Setting', async (t) => {
  t.strictSame(customize({ controller: {}, parent: storedNamespace('tenant-b', { 'gpustack.ai/holds-instances': 'true' }) }), {
    relatedResources: [SETTING_RULE]
  })
})

t.test('without its name label (stored before the API server set it) a namespace relates its Instances by namespace', async (t) => {
  const variants: Array<Record<string, string> | undefined> = [undefined, { team: 'a' }, { 'kubernetes.io/metadata.name': 'someone-else' }]
  for (const labels of variants) {
    const parent = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-b', ...(labels !== undefined ? { labels } : {}) } }
    t.strictSame(instancesRule(customize({ controller: {}, parent })), {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      resource: 'instances',
      namespace: 'tenant-b'
    })
  }
})

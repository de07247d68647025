/**
 * The cluster driver's related objects: one selection type per rule, decided as Metacontroller's
 * `determineSelectionType` decides it, used both to list what a sync request carries and to match
 * a watch event to the parents it re-syncs. The two must agree on every valid rule, or the driver
 * would re-sync a parent for an object its request does not carry (or miss one it does).
 */
import t from 'tap'
import type { JsonObject } from '../support/merge.ts'
import { objectKey } from '../support/children.ts'
import { FakeKube } from '../support/fake-kube.ts'
import { listRelated, ruleMatches, selectionOf } from '../cluster/support/driver-related.ts'
import type { RelatedRule } from '../cluster/support/driver-protocol.ts'

const INSTANCES = { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances' }
const NAMESPACES = { apiVersion: 'v1', resource: 'namespaces' }

function instance(namespace: string, name: string, labels: Record<string, string> = {}): JsonObject {
  return { ...INSTANCES, kind: 'Instance', metadata: { name, namespace, labels }, spec: {} }
}

/** Namespaces a (team=x) and b (no label of its own), with Instances of both. */
async function cluster(): Promise<FakeKube> {
  const kube = new FakeKube()
  await kube.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a', labels: { team: 'x' } } })
  await kube.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'b' } })
  for (const o of [instance('a', 'i1', { app: 'web' }), instance('a', 'i2'), instance('b', 'i1', { app: 'web' }), instance('b', 'i3')])
    await kube.create({ ...INSTANCES, namespace: String((o.metadata as JsonObject).namespace) }, o)
  return kube
}

async function listedKeys(kube: FakeKube, rule: RelatedRule): Promise<string[]> {
  const found = (await listRelated(kube, [rule])).get('Instance.worker.gpustack.ai/v1alpha1')
  return [...(found?.keys() ?? [])].sort()
}

async function matchedKeys(kube: FakeKube, rule: RelatedRule): Promise<string[]> {
  const all = (await kube.list(INSTANCES)).body
  const matched: string[] = []
  for (const o of all) if (await ruleMatches(kube, rule, o)) matched.push(objectKey(o))
  return matched.sort()
}

t.test('selection types, in the order Metacontroller decides them', async (t) => {
  const rows: Array<{ rule: Partial<RelatedRule>; expected: string }> = [
    { rule: {}, expected: 'labels' },
    { rule: { labelSelector: {} }, expected: 'labels' },
    { rule: { labelSelector: null }, expected: 'labels' },
    { rule: { namespace: 'a' }, expected: 'namespaceAndNames' },
    { rule: { names: ['i1'] }, expected: 'namespaceAndNames' },
    { rule: { names: [] }, expected: 'labels' },
    { rule: { namespace: 'a', labelSelector: {} }, expected: 'namespaceAndLabels' },
    { rule: { namespaceSelector: {} }, expected: 'namespaceSelector' },
    { rule: { namespaceSelector: {}, labelSelector: { matchLabels: { app: 'web' } } }, expected: 'namespaceSelector' },
    { rule: { namespace: '', namespaceSelector: {} }, expected: 'namespaceSelector' }
  ]
  for (const { rule, expected } of rows) t.equal(selectionOf({ ...INSTANCES, ...rule }), expected, JSON.stringify(rule))
  t.throws(() => selectionOf({ ...INSTANCES, names: ['i1'], labelSelector: {} }), /both names and labelSelector/)
  t.throws(() => selectionOf({ ...INSTANCES, names: ['i1'], namespaceSelector: {} }), /both names and labelSelector/)
  t.throws(() => selectionOf({ ...INSTANCES, namespace: 'a', namespaceSelector: {} }), /both namespace and namespaceSelector/)
})

t.test('listing and event matching select the same objects', async (t) => {
  const kube = await cluster()
  const rows: Array<{ name: string; rule: Partial<RelatedRule>; expected: string[] }> = [
    { name: 'everything', rule: {}, expected: ['a/i1', 'a/i2', 'b/i1', 'b/i3'] },
    { name: 'labels in every namespace', rule: { labelSelector: { matchLabels: { app: 'web' } } }, expected: ['a/i1', 'b/i1'] },
    { name: 'one namespace', rule: { namespace: 'b' }, expected: ['b/i1', 'b/i3'] },
    { name: 'names in every namespace', rule: { names: ['i1'] }, expected: ['a/i1', 'b/i1'] },
    { name: 'names in one namespace', rule: { namespace: 'a', names: ['i1', 'i3'] }, expected: ['a/i1'] },
    { name: 'labels in one namespace', rule: { namespace: 'b', labelSelector: { matchLabels: { app: 'web' } } }, expected: ['b/i1'] },
    { name: 'a namespace selector', rule: { namespaceSelector: { matchLabels: { team: 'x' } } }, expected: ['a/i1', 'a/i2'] },
    {
      name: 'a namespace selector on the name label, with labels',
      rule: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'b' } },
        labelSelector: { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }
      },
      expected: ['b/i3']
    },
    {
      name: 'NotIn selects a namespace without the key',
      rule: { namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['x'] }] } },
      expected: ['b/i1', 'b/i3']
    }
  ]
  for (const { name, rule, expected } of rows) {
    t.test(name, async (t) => {
      t.strictSame(await listedKeys(kube, { ...INSTANCES, ...rule }), expected, 'listed')
      t.strictSame(await matchedKeys(kube, { ...INSTANCES, ...rule }), expected, 'matched')
    })
  }
})

t.test('a namespace selector is matched against the Namespace as it is now', async (t) => {
  const kube = await cluster()
  const rule: RelatedRule = {
    ...INSTANCES,
    labelSelector: {},
    namespaceSelector: {
      matchLabels: { 'kubernetes.io/metadata.name': 'b' },
      matchExpressions: [{ key: 'gpustack.ai/holds-instances', operator: 'NotIn', values: ['true'] }]
    }
  }
  t.strictSame(await matchedKeys(kube, rule), ['b/i1', 'b/i3'], 'unlabelled: its Instances')
  const b = (await kube.get({ ...NAMESPACES, name: 'b' })).body
  const meta = b.metadata as JsonObject
  await kube.update({ ...NAMESPACES, name: 'b' }, { ...b, metadata: { ...meta, labels: { 'gpustack.ai/holds-instances': 'true' } } })
  const stored = ((await kube.get({ ...NAMESPACES, name: 'b' })).body.metadata as JsonObject).labels
  t.strictSame(stored, { 'gpustack.ai/holds-instances': 'true', 'kubernetes.io/metadata.name': 'b' }, 'the name label is set again')
  t.strictSame(await matchedKeys(kube, rule), [], 'labelled: no event relates an Instance')
  t.strictSame(await listedKeys(kube, rule), [], 'labelled: the request carries none')
})

t.test('an object whose Namespace is gone, or of another type, matches nothing', async (t) => {
  const kube = await cluster()
  const rule: RelatedRule = { ...INSTANCES, namespaceSelector: {} }
  t.equal(await ruleMatches(kube, rule, instance('gone', 'i9')), false, 'Namespace not found')
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'i1', namespace: 'a' } }
  t.equal(await ruleMatches(kube, { ...INSTANCES }, pod), false, 'a Pod against an Instance rule')
})

t.test('a rule Metacontroller refuses matches no event, and fails the listing', async (t) => {
  const kube = await cluster()
  const refused: RelatedRule[] = [
    { ...INSTANCES, names: ['i1'], labelSelector: {} },
    { ...INSTANCES, namespace: 'a', namespaceSelector: {} }
  ]
  for (const rule of refused) {
    t.equal(await ruleMatches(kube, rule, instance('a', 'i1')), false, JSON.stringify(rule))
    await t.rejects(listRelated(kube, [rule]), /related rule cannot have both/)
  }
  const invalidSelector: RelatedRule = { ...INSTANCES, labelSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } }
  t.equal(await ruleMatches(kube, invalidSelector, instance('a', 'i1')), false, 'an invalid selector matches nothing')
  const clusterScoped: RelatedRule = { ...NAMESPACES, namespaceSelector: {} }
  await t.rejects(listRelated(kube, [clusterScoped]), /only supported for namespaced related resources/)
  t.equal(await ruleMatches(kube, clusterScoped, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } }), false)
})

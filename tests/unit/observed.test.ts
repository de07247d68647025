import t from 'tap'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import { observedObject, observedOfType } from '../../hooks/metacontroller/observed.ts'

const policyType = 'NetworkPolicy.networking.k8s.io/v1'
const untyped = { metadata: { name: 'p', namespace: 'a' }, spec: { podSelector: {} } }

t.test('an observed object without apiVersion and kind takes those of its type key', async (t) => {
  const objects = { [policyType]: { 'a/p': untyped }, 'Pod.v1': { 'a/q': { metadata: { name: 'q', namespace: 'a' } } } }
  t.strictSame(
    observedOfType(objects, policyType).map((o) => [o.apiVersion, o.kind]),
    [['networking.k8s.io/v1', 'NetworkPolicy']]
  )
  t.strictSame(
    observedOfType(objects, 'Pod.v1').map((o) => [o.apiVersion, o.kind]),
    [['v1', 'Pod']]
  )
  const kept = keepAsIs(observedObject(objects, policyType, 'a/p')!)
  t.equal(kept.apiVersion, 'networking.k8s.io/v1')
  t.equal(kept.kind, 'NetworkPolicy')
  t.strictSame(untyped, { metadata: { name: 'p', namespace: 'a' }, spec: { podSelector: {} } }, 'the request is not changed')
})

t.test('an observed object takes the apiVersion and kind of its type key, whatever it says itself', async (t) => {
  const objects = { [policyType]: { 'a/p': { ...untyped, apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' } } }
  t.strictSame(
    [observedObject(objects, policyType, 'a/p')?.apiVersion, observedObject(objects, policyType, 'a/p')?.kind],
    ['networking.k8s.io/v1', 'NetworkPolicy']
  )
})

t.test('an entry whose metadata gives another object key than it is filed under is not observed', async (t) => {
  const objects = {
    [policyType]: { 'a/p': { metadata: { name: 'q', namespace: 'a' } }, 'b/p': { metadata: { name: 'p', namespace: 'a' } } }
  }
  t.equal(observedObject(objects, policyType, 'a/p'), undefined, 'another name')
  t.equal(observedObject(objects, policyType, 'b/p'), undefined, 'another namespace')
  t.strictSame(observedOfType(objects, policyType), [])
  t.ok(
    observedObject({ 'Setting.gpustack.ai/v1alpha1': { s: { metadata: { name: 's' } } } }, 'Setting.gpustack.ai/v1alpha1', 's'),
    'cluster-scoped by name'
  )
})

t.test('a last-applied record without its type is answered with the observed type', async (t) => {
  const record = JSON.stringify({ metadata: { name: 'p', namespace: 'a' }, spec: { podSelector: { matchLabels: { x: 'y' } } } })
  const observed = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'a', annotations: { 'metacontroller.k8s.io/last-applied-configuration': record } },
    spec: { podSelector: { matchLabels: { x: 'y' } } }
  }
  t.strictSame(keepAsIs(observed), {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'a' },
    spec: { podSelector: { matchLabels: { x: 'y' } } }
  })
})

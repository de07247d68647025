import t from 'tap'
import { keepAsIs, observedObject, observedOfType } from '../../hooks/metacontroller/observed.ts'

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

t.test('an observed object keeps the apiVersion and kind it has', async (t) => {
  const objects = { [policyType]: { 'a/p': { ...untyped, apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' } } }
  t.equal(observedObject(objects, policyType, 'a/p')?.kind, 'NetworkPolicy')
})

t.test('a last-applied record without its type is answered with the observed type', async (t) => {
  const record = JSON.stringify({ metadata: { name: 'p', namespace: 'a' }, spec: { podSelector: { matchLabels: { x: 'y' } } } })
  const observed = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'a', annotations: { 'metacontroller.k8s.io/last-applied-configuration': record } }
  }
  t.strictSame(keepAsIs(observed), {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'a' },
    spec: { podSelector: { matchLabels: { x: 'y' } } }
  })
})

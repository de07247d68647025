/**
 * keepAsIs against Metacontroller's merge (tests/support/merge.ts imitates `pkg/dynamic/apply` and
 * `ApplyUpdate`): whatever the last-applied record of a child says, the kept child is the observed
 * object, and applying it writes nothing but the record itself; a child nobody touched since
 * Metacontroller applied it is answered exactly as recorded, so its merge is a no-op.
 */
import t from 'tap'
import fc from 'fast-check'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import {
  applyUpdate,
  deepEqual,
  goJson,
  isObject,
  jsonDiff,
  LAST_APPLIED_ANNOTATION,
  MERGE_KEYS,
  mergeKeyString,
  type Json,
  type JsonObject
} from '../support/merge.ts'

/** An own data property, so that `__proto__` is a key like any other. */
function put(target: JsonObject, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}
const objectOf = (entries: ReadonlyArray<readonly [string, Json]>): JsonObject => {
  const out: JsonObject = {}
  for (const [k, v] of entries) put(out, k, v)
  return out
}

// A small alphabet, so that generated records and objects overlap often: the same keys (the merge
// keys among them), the same values, lists of objects that do and do not share a merge key.
const key = fc.constantFrom('name', 'port', 'containerPort', 'a', 'b', 'spec', '__proto__', 'constructor')
const scalar: fc.Arbitrary<Json> = fc.constantFrom<Json>(1, 2, '1', 'x', 'y', true, null, 80, 1.5)
const { value } = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 4 }).map(objectOf),
    // List items that share a merge key, as Service ports and containers do.
    fc.array(
      fc
        .tuple(fc.constantFrom('name', 'port'), scalar, fc.array(fc.tuple(key, tie('value')), { maxLength: 2 }))
        .map(([k, v, rest]) => objectOf([[k, v], ...rest])),
      { maxLength: 3 }
    )
  )
}))
const body = fc.array(fc.tuple(fc.constantFrom('spec', 'data', 'type', 'roleRef', 'subjects', 'x'), value), { maxLength: 4 }).map(objectOf)
const stringMap = fc
  .array(fc.tuple(fc.constantFrom('app', 'controller-uid', 'tier', 'x'), fc.constantFrom('a', 'b', 'uid-1')), { maxLength: 3 })
  .map(objectOf)

/** An observed child as stored: identity, system metadata, owner, status, and `record` as its last-applied annotation. */
function stored(spec: JsonObject, labels: JsonObject, annotations: JsonObject, record: string | undefined, status: Json): JsonObject {
  const metadata: JsonObject = {
    name: 'ws',
    namespace: 'team-a',
    uid: 'pod-uid',
    resourceVersion: '7',
    generation: 1,
    creationTimestamp: '2026-01-01T00:00:00Z',
    managedFields: [{ manager: 'metacontroller' }],
    ownerReferences: [{ apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', name: 'ws', uid: 'i-uid', controller: true }],
    labels,
    annotations: record === undefined ? annotations : { ...annotations, [LAST_APPLIED_ANNOTATION]: record }
  }
  return { apiVersion: 'v1', kind: 'Pod', ...spec, metadata, status }
}

/** A record a tenant may write: any kind, namespace and name, any labels, any body; or any text at all. */
const record: fc.Arbitrary<string> = fc.oneof(
  fc
    .record({
      apiVersion: fc.constantFrom('v1', 'rbac.authorization.k8s.io/v1', 'apps/v1'),
      kind: fc.constantFrom('Pod', 'ClusterRoleBinding', 'Secret', 'Service'),
      name: fc.constantFrom('ws', 'cluster-admin-binding', 'other'),
      namespace: fc.constantFrom('team-a', 'kube-system', undefined),
      labels: stringMap,
      annotations: stringMap,
      extra: fc.array(fc.tuple(fc.constantFrom('ownerReferences', 'uid', 'finalizers', 'resourceVersion'), value), { maxLength: 2 }),
      body,
      status: fc.option(value)
    })
    .map(({ apiVersion, kind, name, namespace, labels, annotations, extra, body, status }) => {
      const metadata = objectOf([
        ['name', name],
        ...(namespace === undefined ? [] : [['namespace', namespace] as const]),
        ['labels', labels],
        ['annotations', annotations],
        ...extra
      ])
      const out: JsonObject = { apiVersion, kind, ...body, metadata }
      if (status !== null) out.status = status
      return goJson(out)
    }),
  value.map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 20 })
)

/**
 * Whether some list in `v` holds objects that all carry a merge key with one value twice. The
 * merge folds such items into copies of one, whatever the answer holds (metacontroller.md: the
 * duplicate Service ports), and the API server refuses such lists in its own kinds.
 */
function foldable(v: Json): boolean {
  if (Array.isArray(v)) {
    const items = v.filter(isObject)
    const folds =
      items.length === v.length &&
      MERGE_KEYS.some((k) => items.every((i) => Object.hasOwn(i, k)) && new Set(items.map((i) => mergeKeyString(i[k]))).size < items.length)
    return folds || v.some(foldable)
  }
  return isObject(v) && Object.keys(v).some((k) => foldable(v[k] as Json))
}

/** `o` without its last-applied annotation: what the merge may not change. */
function withoutRecord(o: JsonObject): JsonObject {
  const out = structuredClone(o)
  const meta = out.metadata as JsonObject
  delete (meta.annotations as JsonObject)[LAST_APPLIED_ANNOTATION]
  return out
}

t.test('whatever the record says, the kept child is the observed object and the merge writes nothing else', async (t) => {
  let merged = 0
  fc.assert(
    fc.property(body, stringMap, stringMap, record, value, (spec, labels, annotations, text, status) => {
      const observed = stored(spec, labels, annotations, text, status)
      fc.pre(!foldable(observed))
      const kept = keepAsIs(structuredClone(observed) as never) as unknown as JsonObject
      const meta = kept.metadata as JsonObject
      const identity = [kept.apiVersion, kept.kind, meta.name, meta.namespace] as Json[]
      if (!deepEqual(identity, ['v1', 'Pod', 'ws', 'team-a'])) throw new Error(`kept as ${JSON.stringify(identity)} for record ${text}`)
      let result
      try {
        result = applyUpdate(observed, kept)
      } catch {
        return // a record that is not a JSON object fails Metacontroller's apply of this child: nothing is written
      }
      merged++
      const diff = jsonDiff(withoutRecord(observed), withoutRecord(result.object))
      if (diff.length > 0) throw new Error(`the merge of the kept child wrote ${diff.join('; ')} for record ${text}`)
    }),
    { numRuns: 1500 }
  )
  t.ok(merged > 500, `${merged} generated records merged`)
})

/**
 * A part of `v`, chosen by `bits`: some keys of each object, each kept value a part of the
 * original; lists whole. What Metacontroller applied is always such a part of the object it
 * applied it to (the object adds server defaults, status and other writers' fields).
 */
function part(v: Json, bits: boolean[]): Json {
  if (!isObject(v)) return structuredClone(v)
  return objectOf(Object.keys(v).flatMap((k) => ((bits.shift() ?? true) ? [[k, part(v[k] as Json, bits)] as const] : [])))
}

t.test('a child nobody touched since Metacontroller applied it is kept exactly as recorded, with no write', async (t) => {
  let checked = 0
  fc.assert(
    fc.property(body, stringMap, value, fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }), (objectBody, labels, status, bits) => {
      const recordedBody = part(objectBody, bits) as JsonObject
      const recorded: JsonObject = {
        apiVersion: 'v1',
        kind: 'Pod',
        ...recordedBody,
        metadata: { labels: part(labels, bits), name: 'ws', namespace: 'team-a' }
      }
      const observed = stored(objectBody, labels, {}, goJson(recorded), status)
      // Only a record the merge reproduces is one Metacontroller leaves alone (lists with one key twice are not).
      fc.pre(!applyUpdate(observed, recorded).changed)
      checked++
      const kept = keepAsIs(structuredClone(observed) as never) as unknown as JsonObject
      if (!deepEqual(kept, recorded)) throw new Error(`kept ${JSON.stringify(kept)}, recorded ${JSON.stringify(recorded)}`)
      if (applyUpdate(observed, kept).changed) throw new Error(`applying the kept child changes it: ${JSON.stringify(kept)}`)
    }),
    { numRuns: 1000 }
  )
  t.ok(checked > 500, `${checked} untouched children checked`)
})

t.test('the attack: a ClusterRoleBinding recorded on a Pod is answered as the Pod, without the binding', async (t) => {
  const labels = { 'app.kubernetes.io/part-of': 'ws', 'controller-uid': 'i-uid' }
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'tenant-admin', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'team-a' }]
  }
  const pod = stored({ spec: { containers: [{ name: 'main', image: 'python' }] } }, labels, {}, JSON.stringify(binding), {
    phase: 'Running'
  })
  const kept = keepAsIs(structuredClone(pod) as never)
  t.strictSame(kept, { apiVersion: 'v1', kind: 'Pod', metadata: { labels, name: 'ws', namespace: 'team-a' } })
  t.notOk(applyUpdate(pod, kept as unknown as JsonObject).object.roleRef, 'nothing of the binding reaches the Pod')
})

t.test('list maps are kept item by item, as Metacontroller pairs them; other lists whole as observed', async (t) => {
  const ports = [
    { name: 'tcp-8888', port: 8888, protocol: 'TCP', targetPort: 8888, nodePort: 31000 },
    { name: 'ssh', port: 22, protocol: 'TCP', targetPort: 22, nodePort: 31022 }
  ]
  const recordText = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'ws', namespace: 'team-a' },
    spec: {
      ports: [
        { name: 'ssh', port: 22, nodePort: 1 },
        { name: 'gone', port: 9 }
      ],
      tolerations: [{ key: 'a' }]
    }
  })
  const observed = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'ws', namespace: 'team-a', annotations: { [LAST_APPLIED_ANNOTATION]: recordText } },
    spec: { ports, tolerations: [{ key: 'b', effect: 'NoSchedule' }] }
  }
  t.strictSame(keepAsIs(observed).spec, {
    ports: [{ name: 'ssh', port: 22, nodePort: 31022 }],
    tolerations: [{ effect: 'NoSchedule', key: 'b' }]
  })
})

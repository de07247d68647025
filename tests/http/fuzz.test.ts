/**
 * Hostile input through every route (fast-check, `app.inject`): starting from a valid request,
 * one mutation at a time: a value of the wrong type at any path, a prototype member's name as a
 * key or as a name, nesting far past any Kubernetes object, a huge string. The service never
 * answers 500; a 200 fits the route's response schema; and where the mutation made the parent's
 * spec wrong, the Instance and GPUCellPool syncs keep every observed child exactly as it was
 * recorded.
 *
 * `FUZZ_RUNS` (default 150) is the number of generated requests per route; the issue's
 * acceptance run uses 100,000 (`FUZZ_ROUTE=<part of a URL>` runs only matching routes, to spread
 * such a run over processes; `FUZZ_SEED` replays one).
 */
import t from 'tap'
import { appendFileSync } from 'node:fs'
import fc from 'fast-check'
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { InstanceSpecSchema } from '../../hooks/api/instance.ts'
import { CompositeResponseSchema, CustomizeResponseSchema, DecoratorResponseSchema } from '../../hooks/metacontroller/schemas.ts'
import { AdmissionResponseSchema } from '../../hooks/admission/review.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { PRIVILEGED, builtPod, sshRelated } from '../support/instance-requests.ts'
import { NAME, NOW, NS, POD_STATUS, baseSpec, instance, observedPod, observedService, request, setting } from '../unit/fixtures/instance.ts'
import { sync as cellpoolSync } from '../../hooks/cellpool/hooks.ts'
import { poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import { PoolWorld, poolObject, poolSpec } from '../unit/fixtures/cellpool.ts'

const RUNS = Number(process.env.FUZZ_RUNS ?? '150')
/** A file that gets a line every 5,000 runs, to follow a long run. */
const PROGRESS = process.env.FUZZ_PROGRESS
/** Only the routes whose URL contains this (all when unset), to spread a long run over processes. */
const ROUTE = process.env.FUZZ_ROUTE
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)

// Load shedding off: this test is about what a request can do, not about how busy the machine is.
const app = await buildApp({ routes, clock: () => NOW, limits: { maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0, maxInflightBytes: 0 } })
t.teardown(() => app.close())

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Path = ReadonlyArray<string | number>

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', 'isPrototypeOf']

/** Every path of `value`, the root included. */
function paths(value: Json, prefix: Path = []): Path[] {
  const out: Path[] = [prefix]
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])))
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]))
  return out
}

/** Sets an own data property, so a key `__proto__` is a key and not the prototype. */
function define(target: object, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A copy of `root` with `path` replaced by `value` (`root` itself when the path is empty). */
function replaced(root: Json, path: Path, value: unknown): unknown {
  if (path.length === 0) return value
  const copy = structuredClone(root) as Record<string | number, unknown>
  let node: Record<string | number, unknown> = copy
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>
  define(node, path[path.length - 1] as string | number, value)
  return copy
}

/** A copy of `root` whose object at `path` gains (or has renamed to) key `key` holding `value`. */
function withKey(root: Json, path: Path, key: string, value: unknown, rename: boolean): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>
  let node: unknown = copy
  for (const k of path) node = (node as Record<string | number, unknown>)[k]
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return copy
  const record = node as Record<string, unknown>
  const keys = Object.keys(record)
  if (rename && keys.length > 0) {
    const old = keys[0] as string
    const moved = record[old]
    delete record[old]
    define(record, key, moved)
  } else define(record, key, value)
  return copy
}

function nested(depth: number): unknown {
  let value: unknown = 'x'
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value }
  return value
}

/** Values of every JSON type, hostile ones weighted in. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...PROTOTYPE_NAMES),
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.constantFrom(...PROTOTYPE_NAMES, 'x', 1, null), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom(...PROTOTYPE_NAMES, 'a'), fc.constantFrom('x', 1, null, true), { maxKeys: 3 }),
  fc.integer({ min: 1, max: 300 }).map(nested),
  fc.integer({ min: 1, max: 1024 }).map((kib) => 'x'.repeat(kib * 1024))
)

/** One mutation of `base`, with the path it touched. */
function mutation(base: Json): fc.Arbitrary<{ body: unknown; path: Path }> {
  const all = paths(base)
  const objects = all.filter((p) => {
    let node: unknown = base
    for (const k of p) node = (node as Record<string | number, unknown>)[k]
    return node !== null && typeof node === 'object' && !Array.isArray(node)
  })
  // Paths inside the parent's spec get their own share, so that wrong specs are common.
  const inSpec = all.filter((p) => p[0] === 'parent' && p[1] === 'spec' && p.length > 2)
  const replace = (candidates: Path[]): fc.Arbitrary<{ body: unknown; path: Path }> =>
    fc
      .record({ path: fc.constantFrom(...candidates), value: hostileValue })
      .map(({ path, value }) => ({ body: replaced(base, path, value), path }))
  return fc.oneof(
    replace(all),
    replace(inSpec.length > 0 ? inSpec : all),
    fc
      .record({ path: fc.constantFrom(...objects), key: fc.constantFrom(...PROTOTYPE_NAMES), value: hostileValue, rename: fc.boolean() })
      .map(({ path, key, value, rename }) => ({ body: withKey(base, path, key, value, rename), path }))
  )
}

/** Observed children as Metacontroller shows them, and what keeping each as it is must answer. */
const spec = baseSpec({ ports: [{ port: 8888 }], sshPublicKey: { name: 'keys' }, resources: { accelerator: { count: 1 } } })
const pod = observedPod(builtPod(spec, { sshImage: 'img' }), POD_STATUS.running, { node: 'gpu-1' })
const service = observedService([
  { port: 8888, nodePort: 31000 },
  { port: 22, name: 'ssh', nodePort: 31022 }
])
/** The objects the children record as last applied: keeping a child answers exactly these. */
const recordedChildren = [pod, service].map(
  (c) => JSON.parse(String(c.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration'])) as KubeObject
)
const instanceSync = request({
  parent: instance(spec),
  children: [pod, service],
  related: sshRelated({ namespaceLabels: PRIVILEGED, extra: [setting('instance-ssh-server-image', 'img')] })
}) as unknown as Json

/**
 * A settled pool of two Ready cells: per cell the bootstrap Secret, the SwiftSeedProfile and the
 * SwiftGuest with its status; the CellNodeSet with status rows; the join Secret related.
 */
const world = new PoolWorld(
  poolSpec({
    workloadCluster: {
      kubeconfigSecretRef: { name: 'kc' },
      node: { labels: { gpu: 'on' }, taints: [{ key: 'example.com/gpu-cell', value: 'true', effect: 'NoSchedule' }] }
    },
    updatePolicy: { type: 'Manual' }
  })
)
world.settle(cellpoolSync)
const poolSync = world.request() as unknown as Json
/** Every child the settled pool has, as its last-applied record: what keeping it answers. */
const recordedPoolChildren = world
  .children()
  .map((c) => JSON.parse(String(c.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration'])) as KubeObject)
const byKindAndName = (o: KubeObject): string => `${o.kind}/${o.metadata.name}`
const sortedChildren = (list: KubeObject[]): KubeObject[] => [...list].sort((a, b) => byKindAndName(a).localeCompare(byKindAndName(b)))
const deletingPool = poolObject(poolSpec(), { deleting: '2026-03-01T09:59:00Z' })

const namespace = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: 'team-a', uid: 'ns-uid', labels: { a: 'b' } },
  status: { phase: 'Active' }
}
const cases: Array<{ url: string; base: Json; response: TSchema }> = [
  {
    url: '/hooks/instance/customize',
    base: { controller: {}, parent: instance(spec) } as unknown as Json,
    response: CustomizeResponseSchema
  },
  { url: '/hooks/instance/sync', base: instanceSync, response: CompositeResponseSchema },
  {
    url: '/hooks/instance/finalize',
    base: { ...(instanceSync as Record<string, Json>), finalizing: true },
    response: CompositeResponseSchema
  },
  { url: '/hooks/isolation/customize', base: { controller: {}, parent: namespace }, response: CustomizeResponseSchema },
  {
    url: '/hooks/isolation/sync',
    base: {
      controller: {},
      object: namespace,
      attachments: {
        'NetworkPolicy.networking.k8s.io/v1': {
          'team-a/gpustack-instance-isolation': {
            metadata: { name: 'gpustack-instance-isolation', namespace: 'team-a' },
            spec: { podSelector: { matchLabels: { x: 'y' } } }
          }
        }
      },
      related: {
        'Setting.gpustack.ai/v1alpha1': {
          'instance-isolation-pod-cidrs': { metadata: { name: 'instance-isolation-pod-cidrs' }, value: '10.244.0.0/16' }
        },
        'Instance.worker.gpustack.ai/v1alpha1': { 'team-a/w': { metadata: { name: 'w', namespace: 'team-a' } } }
      }
    },
    response: DecoratorResponseSchema
  },
  {
    url: '/admission/instance',
    base: {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u-1',
        kind: { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' },
        operation: 'UPDATE',
        name: NAME,
        namespace: NS,
        object: instance(spec),
        oldObject: { ...instance(spec), status: { podName: NAME } }
      }
    } as unknown as Json,
    response: AdmissionResponseSchema
  },
  {
    url: '/hooks/cellpool/customize',
    base: { controller: {}, parent: poolObject() } as unknown as Json,
    response: CustomizeResponseSchema
  },
  { url: '/hooks/cellpool/sync', base: poolSync, response: CompositeResponseSchema },
  {
    url: '/hooks/cellpool/finalize',
    base: {
      ...(poolSync as Record<string, Json>),
      parent: { ...(structuredClone(world.parent) as unknown as Record<string, Json>), metadata: deletingPool.metadata as unknown as Json },
      finalizing: true
    },
    response: CompositeResponseSchema
  },
  {
    url: '/admission/cellpool',
    base: {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u-2',
        kind: { group: 'cells.kubeswift.io', version: 'v1alpha1', kind: 'GPUCellPool' },
        operation: 'UPDATE',
        name: 'inference',
        namespace: 'ml',
        object: poolObject(poolSpec({ replicas: 3 })),
        oldObject: poolObject()
      }
    } as unknown as Json,
    response: AdmissionResponseSchema
  }
]

/** Whether `body` (a mutated sync request) still has a parent whose spec the CRD schema refuses. */
function wrongSpec(body: unknown): boolean {
  const parent = (body as { parent?: { spec?: unknown } } | null)?.parent
  return parent !== undefined && parent !== null && typeof parent === 'object' && !Value.Check(InstanceSpecSchema, parent.spec)
}

/** Whether `body` (a mutated cellpool sync request) has a parent whose spec breaks a pool rule. */
function wrongPoolSpec(body: unknown): boolean {
  const parent = (body as { parent?: { metadata?: { name?: unknown }; spec?: unknown } } | null)?.parent
  if (parent === undefined || parent === null || typeof parent !== 'object') return false
  return poolProblems(String(parent.metadata?.name), parent.spec).length > 0
}

for (const c of cases.filter((c) => ROUTE === undefined || c.url.includes(ROUTE))) {
  t.test(`${c.url}: no 500, answers fit the response schema`, async (t) => {
    const statuses = new Map<number, number>()
    let keptChecked = 0
    let runs = 0
    await fc.assert(
      fc.asyncProperty(mutation(c.base), async ({ body, path }) => {
        const res = await app.inject({
          method: 'POST',
          url: c.url,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(body)
        })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        runs++
        if (PROGRESS !== undefined && runs % 5000 === 0) {
          appendFileSync(
            PROGRESS,
            `${new Date().toISOString()} ${c.url} ${runs} runs ${JSON.stringify(Object.fromEntries(statuses))} kept-checked ${keptChecked}\n`
          )
        }
        if (![200, 400, 413].includes(res.statusCode))
          throw new Error(`answered ${res.statusCode}: ${res.body.slice(0, 300)} for a mutation at ${JSON.stringify(path)}`)
        if (res.statusCode !== 200) return
        const answer = res.json<Record<string, unknown>>()
        if (!Value.Check(c.response, answer))
          throw new Error(`200 answer outside the response schema for a mutation at ${JSON.stringify(path)}`)
        // A wrong spec deletes nothing: every observed child is answered as recorded (stop: true
        // still stops, dropping only the Pod). Only mutations inside the spec leave the children
        // as the fixture built them.
        if (c.url === '/hooks/instance/sync' && path[0] === 'parent' && path[1] === 'spec' && wrongSpec(body)) {
          const stop = (body as { parent: { spec: Record<string, unknown> } }).parent.spec.stop === true
          const expected = stop ? recordedChildren.filter((o) => o.kind !== 'Pod') : recordedChildren
          t.strictSame(answer.children, expected, `children kept for a wrong spec at ${JSON.stringify(path)}`)
          keptChecked++
        }
        // The same for a pool whose spec fails the pool rules: every observed child (each cell's
        // Secret, seed profile and guest, and the CellNodeSet) is answered as last applied.
        if (c.url === '/hooks/cellpool/sync' && path[0] === 'parent' && path[1] === 'spec' && wrongPoolSpec(body)) {
          t.strictSame(
            sortedChildren(answer.children as KubeObject[]),
            sortedChildren(recordedPoolChildren),
            `children kept for a wrong pool spec at ${JSON.stringify(path)}`
          )
          keptChecked++
        }
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) }
    )
    t.notOk(statuses.has(500), 'no 500')
    t.comment(
      `${c.url}: ${RUNS} runs, answers ${JSON.stringify(Object.fromEntries([...statuses].sort()))}${keptChecked > 0 ? `, ${keptChecked} wrong specs kept every child` : ''}`
    )
  })
}

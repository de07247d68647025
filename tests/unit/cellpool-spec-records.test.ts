/**
 * The pool's own records, each with one home: the spec's defaults are the CRD's (resolvePool reads
 * them from the schema), and the previous status is read through the status schema the hook
 * writes it by, as the CellNodeSet is read through its own.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import type { GPUCellPoolStatus } from '../../hooks/api/gpucellpool.ts'
import { sync } from '../../hooks/cellpool/hooks.ts'
import { readPrevious } from '../../hooks/cellpool/request/previous-status.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { POOL, T0, ago, poolObject, poolSpec, request } from './fixtures/cellpool.ts'

const CRD = new URL('../../deploy/chart/gpuhooks/files/crds/gpucellpools.cells.kubeswift.io.yaml', import.meta.url)

interface OpenApi {
  properties?: Record<string, OpenApi>
  default?: unknown
}

/** `value` with the CRD's defaults filled in as the API server does: a missing field whose object is present. */
function defaulted(schema: OpenApi, value: unknown, filled: string[], path = 'spec'): unknown {
  if (schema.properties === undefined || typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) }
  for (const [key, property] of Object.entries(schema.properties)) {
    if (Object.hasOwn(out, key)) out[key] = defaulted(property, out[key], filled, `${path}.${key}`)
    else if (property.default !== undefined) {
      out[key] = structuredClone(property.default)
      filled.push(`${path}.${key}`)
    }
  }
  return out
}

const specSchema = (): OpenApi => {
  const crd = parse(readFileSync(CRD, 'utf8')) as { spec: { versions: Array<{ schema: { openAPIV3Schema: OpenApi } }> } }
  const spec = crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.spec
  if (spec === undefined) throw new Error('the GPUCellPool CRD has no spec schema')
  return spec
}

t.test("a spec resolves the same with or without the CRD's defaults written out", async (t) => {
  const schema = specSchema()
  const bare = (gpu: Record<string, unknown>): Record<string, unknown> => ({
    cell: { guestTemplate: { imageRef: { name: 'i' }, guestClassRef: { name: 'g' } }, gpu },
    bootstrap: { joinSecretRef: { name: 'join' } },
    workloadCluster: { kubeconfigSecretRef: { name: 'kc' } },
    capacity: { hami: {} },
    autoscaling: {},
    deletion: {},
    updatePolicy: {}
  })
  for (const spec of [
    bare({ dra: { resourceClaimTemplateName: 'vfio' } }),
    bare({ backend: 'Native', native: { gpuProfileRef: { name: 'p' } } })
  ]) {
    const filled: string[] = []
    const full = defaulted(schema, spec, filled)
    t.ok(filled.length >= 15, `the CRD fills ${filled.length} defaults in: ${filled.join(', ')}`)
    t.same(resolvePool(spec), resolvePool(full))
  }
})

t.test('the previous status is read through its schema: what fails is absent, nothing beyond it is kept', async (t) => {
  const read = readPrevious({
    observedGeneration: 3,
    desiredReplicas: -1,
    lastScaleUpTime: 'yesterday',
    cellDeviceShape: { memoryMiB: 81920, cores: 100, type: 'A100', extra: 'x' },
    demand: { pendingPods: 2, satisfiable: 'two' },
    cells: [
      {
        name: `${POOL}-0`,
        index: 0,
        phase: 'Failed',
        reason: 'ReadyTimeout',
        failureCount: 2,
        failure: { reason: 'ReadyTimeout', since: ago(60), message: 'stayed Booting', note: 'written by someone' }
      },
      { name: `${POOL}-1`, phase: 'Exploded' },
      { name: `${POOL}-2`, phase: 'Ready', failureCount: -4, lastTransitionTime: 'now' },
      { name: `${POOL}-0`, phase: 'Ready' }
    ]
  })
  t.equal(read.observedGeneration, 3)
  t.equal(read.desiredReplicas, undefined, 'a negative size reads as absent')
  t.equal(read.lastScaleUpTime, undefined, 'a time that is not one reads as absent')
  t.same(read.cellDeviceShape, { memoryMiB: 81920, cores: 100 })
  t.equal(read.demand, undefined, 'demand with a count that is not one reads as absent')
  t.same([...read.cells.keys()], [`${POOL}-0`, `${POOL}-2`], 'a row of no phase is not read; of two rows of one name the first')
  t.same(read.cells.get(`${POOL}-0`)?.failure, { reason: 'ReadyTimeout', since: ago(60), message: 'stayed Booting' })
  t.same(read.cells.get(`${POOL}-2`), {
    name: `${POOL}-2`,
    index: undefined,
    phase: 'Ready',
    reason: '',
    message: '',
    lastTransitionTime: undefined,
    readyOnce: false,
    failureCount: 0,
    guestUID: undefined,
    templateHash: undefined
  })
  t.same(readPrevious('not a status').cells, new Map())
})

t.test('an answer never carries what the stored status holds beyond its schema', async (t) => {
  const status = {
    observedGeneration: 1,
    cells: [
      {
        name: `${POOL}-0`,
        index: 0,
        phase: 'Failed',
        reason: 'ReadyTimeout',
        message: 'stayed Booting',
        failureCount: 1,
        lastTransitionTime: ago(10),
        failure: { reason: 'ReadyTimeout', since: ago(10), message: 'stayed Booting', note: 'written by someone' }
      }
    ]
  }
  const answer = sync(request({ parent: poolObject(poolSpec(), { status }) }), T0)
  const row = (answer.status as GPUCellPoolStatus).cells?.find((c) => c.name === `${POOL}-0`)
  t.same(row?.failure, { reason: 'ReadyTimeout', since: ago(10), message: 'stayed Booting' })
})

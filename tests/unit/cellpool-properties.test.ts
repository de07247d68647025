/**
 * Properties of the cellpool hooks over generated histories (testing.md), each played through
 * Metacontroller's dynamic apply and the API server's defaulting (tests/support), KubeSwift
 * stamping guest statuses and the workload agent writing the CellNodeSet's status (the world of
 * fixtures/cellpool.ts).
 */
import t from 'tap'
import fc from 'fast-check'
import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { GPUCellPoolStatusSchema } from '../../hooks/api/gpucellpool.ts'
import { autoscale } from '../../hooks/cellpool/autoscale.ts'
import type { CellPhase } from '../../hooks/cellpool/phases.ts'
import type { CellPoolSyncRequest } from '../../hooks/cellpool/request.ts'
import { planScaling, type CellInput } from '../../hooks/cellpool/scaling.ts'
import { sync } from '../../hooks/cellpool/sync.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { keepAsIs } from '../../hooks/metacontroller/observed.ts'
import type { JsonObject } from '../support/merge.ts'
import { simulateMetacontroller } from '../support/simulate.ts'
import { CNS_KEY, GUEST_KEY, JOIN_TEMPLATE, PoolWorld, SECRET_KEY, SEED_KEY, joinSecret, poolSpec } from './fixtures/cellpool.ts'

const RUNS = { numRuns: 40 }

if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v))

/** One thing that happens to a pool. */
type Event =
  | { kind: 'replicas'; n: number }
  | { kind: 'template'; image: string }
  | { kind: 'policy'; rolling: boolean }
  | { kind: 'pods'; cell: number; pods: number; inFlight: boolean }
  | { kind: 'agent'; up: boolean }
  | { kind: 'nodeReady'; cell: number; ready: boolean }
  | { kind: 'wait'; seconds: number }

const specEvent: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ kind: fc.constant('replicas' as const), n: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ kind: fc.constant('template' as const), image: fc.constantFrom('gpu-noble', 'gpu-noble-2', 'gpu-jammy') }),
  fc.record({ kind: fc.constant('policy' as const), rolling: fc.boolean() })
)
const worldEvent: fc.Arbitrary<Event> = fc.oneof(
  fc.record({
    kind: fc.constant('pods' as const),
    cell: fc.integer({ min: 0, max: 4 }),
    pods: fc.integer({ min: 0, max: 2 }),
    inFlight: fc.boolean()
  }),
  fc.record({ kind: fc.constant('agent' as const), up: fc.boolean() }),
  fc.record({ kind: fc.constant('nodeReady' as const), cell: fc.integer({ min: 0, max: 4 }), ready: fc.boolean() }),
  fc.record({ kind: fc.constant('wait' as const), seconds: fc.integer({ min: 5, max: 1200 }) })
)
const anyEvent = fc.oneof(specEvent, worldEvent)

function apply(world: PoolWorld, e: Event): void {
  switch (e.kind) {
    case 'replicas':
      world.edit((s) => {
        s.replicas = e.n
      })
      break
    case 'template':
      world.edit((s) => {
        ;((s.cell as Record<string, unknown>).guestTemplate as Record<string, unknown>).imageRef = { name: e.image }
      })
      break
    case 'policy':
      world.edit((s) => {
        s.updatePolicy = { type: e.rolling ? 'RollingUpdate' : 'Manual' }
      })
      break
    case 'pods': {
      const n = world.nodes.get(`inference-${e.cell}`)
      if (n !== undefined) {
        n.pods = e.pods
        n.inFlight = e.inFlight
      }
      break
    }
    case 'agent':
      world.agentUp = e.up
      break
    case 'nodeReady': {
      const n = world.nodes.get(`inference-${e.cell}`)
      if (n !== undefined) n.ready = e.ready
      break
    }
    // The agent keeps observing while time passes (when it runs at all).
    case 'wait':
      world.advance(e.seconds)
      world.agent()
      break
  }
}

const seedArb = fc.integer({ min: 1, max: 1_000_000 })
const replicasArb = fc.integer({ min: 0, max: 3 })

/** A settled world of `replicas` Ready cells. */
function settled(replicas: number, seed: number): PoolWorld {
  const world = new PoolWorld(poolSpec({ replicas }), { seed })
  world.settle(sync)
  return world
}

/** The guest uids of cells whose previous status says they were Ready once. */
function readyGuests(request: CellPoolSyncRequest): Map<string, string> {
  const cells =
    (request.parent.status as { cells?: Array<{ name: string; readyOnce?: boolean; guestUID?: string }> } | undefined)?.cells ?? []
  return new Map(cells.filter((c) => c.readyOnce === true && c.guestUID !== undefined).map((c) => [c.name, c.guestUID as string]))
}

function cnsRow(request: CellPoolSyncRequest, name: string): { row: Record<string, unknown> | undefined; matched: boolean } {
  const cns = Object.values(request.children[CNS_KEY] ?? {})[0]
  const status = (cns?.status ?? {}) as { nodes?: Array<Record<string, unknown>>; observedGeneration?: number }
  return { row: status.nodes?.find((n) => n.name === name), matched: status.observedGeneration === cns?.metadata.generation }
}

const deletedGuests = (ops: readonly string[]): string[] =>
  ops.filter((o) => o.startsWith(`delete ${GUEST_KEY} `)).map((o) => o.split('/').at(-1) ?? '')
const createdGuests = (ops: readonly string[]): string[] =>
  ops.filter((o) => o.startsWith(`create ${GUEST_KEY} `)).map((o) => o.split('/').at(-1) ?? '')

t.test('determinism: the same request gives the same response, byte for byte', async (t) => {
  fc.assert(
    fc.property(replicasArb, fc.array(anyEvent, { maxLength: 8 }), seedArb, (replicas, events, seed) => {
      const world = settled(replicas, seed)
      for (const e of events) {
        apply(world, e)
        world.step(sync)
      }
      const request = world.request()
      const reordered = structuredClone(request)
      reordered.children = Object.fromEntries(
        Object.entries(reordered.children)
          .reverse()
          .map(([k, v]) => [k, v === null ? v : Object.fromEntries(Object.entries(v).reverse())])
      )
      const once = JSON.stringify(sync(request, world.now))
      return once === JSON.stringify(sync(structuredClone(request), world.now)) && once === JSON.stringify(sync(reordered, world.now))
    }),
    RUNS
  )
  t.pass('held')
})

t.test('every status fits the CRD status schema, so nothing is pruned when it is written', async (t) => {
  fc.assert(
    fc.property(replicasArb, fc.array(anyEvent, { maxLength: 10 }), seedArb, (replicas, events, seed) => {
      const world = settled(replicas, seed)
      for (const e of events) {
        apply(world, e)
        const status = world.step(sync).status
        const errors = [...Value.Errors(GPUCellPoolStatusSchema, status)].map((x) => `${x.path}: ${x.message}`)
        if (errors.length > 0) throw new Error(errors.join('; '))
        if (JSON.stringify(Value.Clean(GPUCellPoolStatusSchema, structuredClone(status))) !== JSON.stringify(status))
          throw new Error('the schema prunes part of the status')
      }
    }),
    { numRuns: 25 }
  )
  t.pass('held')
})

t.test('convergence: after any history the pool settles, and a settled state is a fixed point', async (t) => {
  fc.assert(
    fc.property(replicasArb, fc.array(anyEvent, { maxLength: 8 }), seedArb, (replicas, events, seed) => {
      const world = settled(replicas, seed)
      for (const e of events) {
        apply(world, e)
        world.step(sync)
      }
      world.agentUp = true
      for (const n of world.nodes.values()) {
        n.pods = 0
        n.inFlight = false
        n.ready = true
      }
      world.settle(sync, 200)
      const answer = sync(world.request(), world.now)
      world.pass(sync)
      if (world.writes !== 0) throw new Error(`a settled state wrote: ${world.operations.join(', ')}`)
      if (JSON.stringify(world.last) !== JSON.stringify(answer)) throw new Error('a settled state answered differently')
      const spec = world.parent.spec as { replicas: number }
      const ready = world.cells().filter((c) => c.phase === 'Ready').length
      if (ready !== spec.replicas) throw new Error(`settled with ${ready} Ready cells, ${spec.replicas} desired`)
    }),
    { numRuns: 25 }
  )
  t.pass('held')
})

t.test('never more than two cells being created at once', async (t) => {
  fc.assert(
    fc.property(fc.array(anyEvent, { minLength: 1, maxLength: 15 }), seedArb, (events, seed) => {
      const world = new PoolWorld(poolSpec({ replicas: 0 }), { seed })
      world.settle(sync)
      for (const e of [{ kind: 'replicas', n: 4 } as Event, ...events]) {
        apply(world, e)
        world.step(sync)
        const creating = world
          .cells()
          .filter(
            (c) =>
              ['Pending', 'AllocatingGPU', 'GuestProvisioning', 'Booting', 'Joining', 'AwaitingGPUCapacity'].includes(c.phase) &&
              c.readyOnce !== true
          )
        if (creating.length > 2) throw new Error(`creating ${creating.map((c) => c.name).join(', ')}`)
      }
    }),
    RUNS
  )
  t.pass('held')
})

t.test('an unchanged spec never removes a Ready cell', async (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 3 }),
      fc.array(worldEvent, { minLength: 1, maxLength: 15 }),
      seedArb,
      (replicas, events, seed) => {
        const world = settled(replicas, seed)
        const ready = new Set(world.guests().map((g) => g.metadata.uid))
        for (const e of events) {
          apply(world, e)
          world.step(sync)
          const now = new Set(world.guests().map((g) => g.metadata.uid))
          for (const uid of ready) if (!now.has(uid)) throw new Error(`guest ${uid} was removed after ${JSON.stringify(e)}`)
        }
      }
    ),
    RUNS
  )
  t.pass('held')
})

/** Ways to block a pool or hide its workload cluster. */
const corruptions: Array<{ name: string; apply: (w: PoolWorld) => void }> = [
  {
    name: 'invalid spec',
    apply: (w) =>
      w.edit((s) => {
        ;(s.cell as Record<string, unknown>).gpu = { count: 2 }
      })
  },
  {
    name: 'guestTemplate sets a controller field',
    apply: (w) =>
      w.edit((s) => {
        ;((s.cell as Record<string, unknown>).guestTemplate as Record<string, unknown>).runPolicy = 'Manual'
      })
  },
  {
    name: 'join Secret missing',
    apply: (w) => {
      w.related = []
    }
  },
  {
    name: 'join Secret without its key',
    apply: (w) => {
      w.related = [joinSecret(JOIN_TEMPLATE, 'value')]
    }
  },
  {
    name: 'unknown token',
    apply: (w) => {
      w.related = [joinSecret('{{ nodeLabels }}\n{{ poolname }}')]
    }
  },
  {
    name: 'no {{ nodeLabels }}',
    apply: (w) => {
      w.related = [joinSecret('#cloud-config\n')]
    }
  },
  {
    name: 'workload cluster unobserved',
    apply: (w) => {
      w.agentUp = false
      w.advance(121)
    }
  },
  {
    name: 'workload cluster unreachable',
    apply: (w) => {
      w.reachable = 'False'
      w.agent()
    }
  }
]

t.test('a bad spec, a bad template, a missing join Secret or an unobserved workload cluster deletes nothing', async (t) => {
  fc.assert(
    fc.property(
      replicasArb,
      fc.array(anyEvent, { maxLength: 6 }),
      fc.constantFrom(...corruptions),
      fc.integer({ min: 0, max: 4 }),
      fc.boolean(),
      seedArb,
      (replicas, events, corruption, next, rolling, seed) => {
        const world = settled(replicas, seed)
        for (const e of events) {
          apply(world, e)
          world.step(sync)
        }
        world.agentUp = true
        world.reachable = 'True'
        world.agent()
        corruption.apply(world)
        // Whatever else the user asks for meanwhile.
        world.edit((s) => {
          s.replicas = next
          s.updatePolicy = { type: rolling ? 'RollingUpdate' : 'Manual' }
        })
        for (let i = 0; i < 4; i++) {
          const before = world.children().map((c) => `${c.kind}/${c.metadata.name}`)
          world.pass(sync)
          const deleted = world.operations.filter((o) => o.startsWith('delete'))
          if (deleted.length > 0) throw new Error(`${corruption.name}: ${deleted.join(', ')} (had ${before.join(', ')})`)
          world.bootGuests()
          world.advance(400)
        }
      }
    ),
    RUNS
  )
  t.pass('held')
})

t.test('a blocked pool answers every observed child exactly as recorded', async (t) => {
  fc.assert(
    fc.property(
      replicasArb,
      fc.array(anyEvent, { maxLength: 6 }),
      fc.constantFrom(...corruptions.slice(0, 6)),
      seedArb,
      (replicas, events, corruption, seed) => {
        const world = settled(replicas, seed)
        for (const e of events) {
          apply(world, e)
          world.step(sync)
        }
        corruption.apply(world)
        const answer = sync(world.request(), world.now)
        const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`
        const sorted = (l: KubeObject[]) => [...l].sort((a, b) => key(a).localeCompare(key(b)))
        if (JSON.stringify(sorted(answer.children)) !== JSON.stringify(sorted(world.children().map(keepAsIs))))
          throw new Error(`${corruption.name}: children changed`)
        const result = simulateMetacontroller({
          parent: world.parent as unknown as JsonObject,
          observed: world.observed,
          desired: answer.children,
          methods: { [SECRET_KEY]: 'InPlace', [SEED_KEY]: 'InPlace', [GUEST_KEY]: 'InPlace', [CNS_KEY]: 'InPlace' },
          server: world.server
        })
        if (result.writes !== 0) throw new Error(`${corruption.name}: applying wrote ${result.operations.join(', ')}`)
      }
    ),
    RUNS
  )
  t.pass('held')
})

t.test('a drained cell is deleted only when its row shows the cordon, allocations read 0, nothing in flight, after 30 s', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3 }), fc.array(anyEvent, { minLength: 1, maxLength: 15 }), seedArb, (replicas, events, seed) => {
      const world = settled(replicas, seed)
      for (const e of events) {
        apply(world, e)
        const request = world.request()
        const ready = readyGuests(request)
        const drains = new Map(
          ((request.parent.status as { cells?: Array<{ name: string; phase: string; lastTransitionTime?: string }> }).cells ?? []).map(
            (c) => [c.name, c]
          )
        )
        world.step(sync)
        for (const name of deletedGuests(world.operations)) {
          if (!ready.has(name)) continue
          const { row, matched } = cnsRow(request, name)
          const allocations = row?.allocations as { read?: boolean; pods?: number; inFlight?: boolean } | undefined
          const since = Date.parse(drains.get(name)?.lastTransitionTime ?? '')
          const ok =
            drains.get(name)?.phase === 'Draining' &&
            matched &&
            row?.unschedulable === true &&
            allocations?.read === true &&
            allocations.pods === 0 &&
            allocations.inFlight !== true &&
            new Date(request.parent.metadata.deletionTimestamp ?? 0).getTime() === 0 &&
            Date.parse(world.now.toISOString()) - 10_000 - since >= 30_000
          if (!ok)
            throw new Error(
              `${name} deleted: row ${JSON.stringify(row)}, matched ${String(matched)}, status ${JSON.stringify(drains.get(name))}`
            )
        }
      }
    }),
    RUNS
  )
  t.pass('held')
})

t.test('a guest is first created only when its row says no Node of that name is present', async (t) => {
  fc.assert(
    fc.property(fc.array(anyEvent, { minLength: 1, maxLength: 15 }), fc.boolean(), seedArb, (events, stale, seed) => {
      const world = new PoolWorld(poolSpec({ replicas: 2 }), { seed })
      if (stale)
        world.nodes.set('inference-1', {
          instance: 'old',
          ready: true,
          live: true,
          devices: [],
          registration: 'Parsed',
          pods: 0,
          inFlight: false,
          unschedulable: false
        })
      for (const e of [{ kind: 'wait', seconds: 5 } as Event, ...events]) {
        apply(world, e)
        const request = world.request()
        world.step(sync)
        for (const name of createdGuests(world.operations)) {
          const { row, matched } = cnsRow(request, name)
          if (row === undefined || row.present !== false || !matched)
            throw new Error(`guest ${name} created with row ${JSON.stringify(row)}, matched ${String(matched)}`)
        }
      }
    }),
    RUNS
  )
  t.pass('held')
})

const phaseArb = fc.constantFrom<CellPhase>('Pending', 'Joining', 'Ready', 'Draining', 'Deleting', 'Failed', 'AwaitingGPUCapacity')

t.test("draining and deleting cells never count toward the autoscaler's base", async (t) => {
  fc.assert(
    fc.property(
      fc.array(phaseArb, { maxLength: 8 }),
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 8 }),
      (phases, min, max) => {
        const cells = phases.map((phase, index) => ({ name: `p-${index}`, index, phase, idle: false, devices: [] }))
        const got = autoscale(
          {
            config: {
              replicas: 1,
              minReplicas: min,
              maxReplicas: max,
              stabilizationWindowSeconds: 600,
              scaleDown: 'Auto',
              scaleDownStabilizationWindowSeconds: 1800
            },
            cells,
            demand: undefined,
            observed: false,
            observedTime: undefined,
            memory: {}
          },
          new Date(0)
        )
        const serving = phases.filter((p) => p !== 'Draining' && p !== 'Deleting' && p !== 'Failed').length
        const ceiling = Math.max(max, min)
        return got.base === Math.min(Math.max(serving, min), ceiling) && got.desiredReplicas === got.base
      }
    ),
    { numRuns: 200 }
  )
  t.pass('held')
})

t.test('a scale-up returns a draining cell to service before building a new one', async (t) => {
  const NOW = new Date('2026-03-01T10:00:00Z')
  const cellArb = fc.record({ phase: fc.constantFrom<CellPhase>('Ready', 'Joining', 'Failed'), draining: fc.boolean() })
  fc.assert(
    fc.property(fc.array(cellArb, { minLength: 1, maxLength: 6 }), fc.integer({ min: 0, max: 8 }), (specs, desired) => {
      const cells: CellInput[] = specs.map((s, index) => {
        const readyOnce = s.phase === 'Ready'
        const draining = s.draining && readyOnce
        return {
          index,
          name: `p-${index}`,
          seen: { phase: s.phase, reason: 'x', message: 'x', readyOnce, lastTransitionTime: '2026-03-01T09:59:55Z', failedNow: false },
          previous: {
            phase: draining ? 'Draining' : s.phase,
            reason: draining ? 'ScaleDown' : 'x',
            message: 'x',
            lastTransitionTime: '2026-03-01T09:59:55Z',
            readyOnce,
            failureCount: 1,
            guestUID: 'u',
            templateHash: 'h'
          },
          children: { secret: true, seed: true, guest: true },
          guestDeleting: false,
          templateHash: 'h',
          row: undefined,
          ownRow: undefined
        }
      })
      const plan = planScaling({
        pool: 'p',
        cells,
        desired,
        workload: { observed: true, generationMatched: true, reason: 'Reachable', message: '' },
        templateHash: 'h',
        updatePolicy: 'Manual',
        specChanged: false,
        now: NOW
      })
      const built = plan.cells.some((c) => c.building)
      const stillDraining = plan.cells.some((c) => c.phase === 'Draining' && c.reason === 'ScaleDown')
      return !(built && stillDraining)
    }),
    { numRuns: 300 }
  )
  t.pass('held')
})

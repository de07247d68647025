/**
 * Properties of the cellpool hooks over generated histories (docs/testing.md), each played through
 * Metacontroller's dynamic apply and the API server's defaulting (tests/support), KubeSwift
 * stamping guest statuses and the workload agent writing the CellNodeSet's status (the world of
 * fixtures/cellpool.ts).
 */
import t from 'tap'
import fc from 'fast-check'
import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { GPUCellPoolStatusSchema } from '../../hooks/api/gpucellpool.ts'
import { autoscale } from '../../hooks/cellpool/plan/autoscale.ts'
import type { CellPhase } from '../../hooks/api/gpucellpool.ts'
import { planScaling } from '../../hooks/cellpool/plan/scaling.ts'
import { sync } from '../../hooks/cellpool/hooks.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import type { CompositeResponse } from '../../hooks/metacontroller/schemas.ts'
import { CNS_KEY, GUEST_KEY, JOIN_TEMPLATE, OBSERVED, PoolWorld, T0, foreignNode, joinSecret, poolSpec } from './fixtures/cellpool.ts'
import type { CellPoolSyncRequest } from '../../hooks/cellpool/model/request.ts'
import type { Cell } from '../../hooks/cellpool/model/cell.ts'

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
  | { kind: 'stale'; meanwhile: Event[] }

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
/**
 * Metacontroller's next sync starting from a pool its cache has not updated with its own last
 * status write (with the current spec and children), after what else happened `meanwhile`
 * (between the last sync's read and its status write). Every property below holds across it: what
 * a stale status could make the hook forget has a witness among the children (witness.ts).
 */
const staleOf = (meanwhile: fc.Arbitrary<Event>): fc.Arbitrary<Event> =>
  fc.record({ kind: fc.constant('stale' as const), meanwhile: fc.array(meanwhile, { maxLength: 3 }) })
const staleSync = staleOf(anyEvent)
const anyEventOrStale = fc.oneof(anyEvent, staleSync)

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
    // Metacontroller's next sync starts from its cached pool, which lacks its own last status write.
    case 'stale':
      for (const m of e.meanwhile) apply(world, m)
      world.staleNext = true
      break
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

/** What a history's check sees after each step: the event, the request the hook was given, and its answer. */
type StepCheck = (e: Event, request: CellPoolSyncRequest, answer: CompositeResponse) => void

/** Plays `events` on `world`, one step of the whole system after each, and runs `check` after every step. */
function play(world: PoolWorld, events: readonly Event[], check?: StepCheck): PoolWorld {
  for (const e of events) {
    apply(world, e)
    if (check === undefined) {
      world.step(sync)
      continue
    }
    const request = world.request()
    check(e, request, world.step(sync))
  }
  return world
}

/** A pool settled at `replicas` Ready cells, against a fake API server of `seed`, and what happens to it next. */
interface History {
  replicas: number
  events: Event[]
  seed: number
}

/** Histories of `minLength` to `maxLength` events drawn from `events`, on pools settled at `replicas`. */
function historyArb(o: { maxLength: number; minLength?: number; replicas?: fc.Arbitrary<number>; events?: fc.Arbitrary<Event> }) {
  return fc.record<History>({
    replicas: o.replicas ?? replicasArb,
    events: fc.array(o.events ?? anyEventOrStale, { minLength: o.minLength ?? 0, maxLength: o.maxLength }),
    seed: seedArb
  })
}

/** The world after a history, `check` run after each of its steps. */
const played = (h: History, check?: StepCheck): PoolWorld => play(settled(h.replicas, h.seed), h.events, check)

/** A property as a test: fast-check throws its smallest counterexample, otherwise the test records one pass. */
function holds<Ts>(name: string, property: fc.IProperty<Ts>, params: fc.Parameters<Ts> = RUNS): void {
  t.test(name, async (t) => {
    fc.assert(property, params)
    t.pass('held')
  })
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

holds(
  'determinism: the same request gives the same response, byte for byte',
  fc.property(historyArb({ maxLength: 8 }), (h) => {
    const world = played(h)
    const request = world.request()
    const reordered = structuredClone(request)
    reordered.children = Object.fromEntries(
      Object.entries(reordered.children)
        .reverse()
        .map(([k, v]) => [k, v === null ? v : Object.fromEntries(Object.entries(v).reverse())])
    )
    const once = JSON.stringify(sync(request, world.now))
    return once === JSON.stringify(sync(structuredClone(request), world.now)) && once === JSON.stringify(sync(reordered, world.now))
  })
)

holds(
  'every status fits the CRD status schema, so nothing is pruned when it is written',
  fc.property(historyArb({ maxLength: 10 }), (h) => {
    played(h, (_e, _request, { status }) => {
      const errors = [...Value.Errors(GPUCellPoolStatusSchema, status)].map((x) => `${x.path}: ${x.message}`)
      if (errors.length > 0) throw new Error(errors.join('; '))
      if (JSON.stringify(Value.Clean(GPUCellPoolStatusSchema, structuredClone(status))) !== JSON.stringify(status))
        throw new Error('the schema prunes part of the status')
    })
  }),
  { numRuns: 25 }
)

holds(
  'convergence: after any history, stale syncs included, the pool settles with nothing left over, and a settled state is a fixed point',
  fc.property(historyArb({ maxLength: 8 }), (h) => {
    const world = played(h)
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
    // docs/cellpool.md: a pool none of whose cells was ever Ready stops replacing them after three
    // failures (waits longer than a phase's budget fail cells), and says so; that is settled too.
    if (world.condition('Progressing')?.reason === 'ReplacementExhausted') return
    const ready = world.cells().filter((c) => c.phase === 'Ready').length
    if (ready !== spec.replicas) throw new Error(`settled with ${ready} Ready cells, ${spec.replicas} desired`)
    const left = world.cells().filter((c) => c.phase !== 'Ready')
    if (left.length > 0)
      throw new Error(`settled with cells left over: ${left.map((c) => `${c.name} ${c.phase} ${c.reason ?? ''}`).join(', ')}`)
    if (world.guests().length !== spec.replicas) throw new Error(`settled with ${world.guests().length} guests, ${spec.replicas} desired`)
  }),
  { numRuns: 100 }
)

holds(
  'never more than two machines being created at once, nor more than four cells being built',
  fc.property(fc.array(anyEventOrStale, { minLength: 1, maxLength: 15 }), seedArb, (events, seed) => {
    const world = settled(0, seed)
    play(world, [{ kind: 'replicas', n: 6 }, ...events], () => {
      const building = world
        .cells()
        .filter(
          (c) =>
            ['Pending', 'AllocatingGPU', 'GuestProvisioning', 'Booting', 'Joining', 'AwaitingGPUCapacity'].includes(c.phase) &&
            c.readyOnce !== true
        )
      const guests = new Set(world.guests().map((g) => g.metadata.name))
      const machines = building.filter((c) => guests.has(c.name))
      if (machines.length > 2) throw new Error(`machines being created for ${machines.map((c) => c.name).join(', ')}`)
      if (building.length > 4) throw new Error(`building ${building.map((c) => c.name).join(', ')}`)
    })
  })
)

holds(
  'an unchanged spec never removes a Ready cell',
  fc.property(
    historyArb({
      replicas: fc.integer({ min: 1, max: 3 }),
      events: fc.oneof(worldEvent, staleOf(worldEvent)),
      minLength: 1,
      maxLength: 15
    }),
    (h) => {
      const world = settled(h.replicas, h.seed)
      const ready = new Set(world.guests().map((g) => g.metadata.uid))
      play(world, h.events, (e) => {
        const now = new Set(world.guests().map((g) => g.metadata.uid))
        for (const uid of ready) if (!now.has(uid)) throw new Error(`guest ${uid} was removed after ${JSON.stringify(e)}`)
      })
    }
  )
)

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

holds(
  'a bad spec, a bad template, a missing join Secret or an unobserved workload cluster deletes nothing',
  fc.property(
    historyArb({ maxLength: 6 }),
    fc.constantFrom(...corruptions),
    fc.integer({ min: 0, max: 4 }),
    fc.boolean(),
    (h, corruption, next, rolling) => {
      const world = played(h)
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
  )
)

holds(
  'a blocked pool answers every observed child exactly as recorded',
  fc.property(historyArb({ maxLength: 6 }), fc.constantFrom(...corruptions.slice(0, 6)), (h, corruption) => {
    const world = played(h)
    corruption.apply(world)
    const answer = sync(world.request(), world.now)
    const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`
    const sorted = (l: KubeObject[]) => [...l].sort((a, b) => key(a).localeCompare(key(b)))
    if (JSON.stringify(sorted(answer.children)) !== JSON.stringify(sorted(world.children().map(keepAsIs))))
      throw new Error(`${corruption.name}: children changed`)
    const result = world.applyChildren(answer.children)
    if (result.writes !== 0) throw new Error(`${corruption.name}: applying wrote ${result.operations.join(', ')}`)
  })
)

/**
 * The drain rule as a step check: a machine the hook recorded Ready once (in any answer, which a
 * stale request may not show) is deleted only when its row shows the cordon carried out,
 * allocations read 0 and nothing in flight, at least 30 s after the hook first answered it
 * Draining without a return to service since.
 */
function drainedBeforeDeleted(world: PoolWorld): StepCheck {
  const everReady = new Set(readyGuests({ parent: world.parent } as CellPoolSyncRequest).values())
  const drainingSince = new Map<string, number>()
  return (_e, request, answer) => {
    const at = world.now.getTime() - 10_000
    const uidOf = new Map(Object.values(request.children[GUEST_KEY] ?? {}).map((g) => [g.metadata.name, g.metadata.uid ?? '']))
    for (const name of deletedGuests(world.operations)) {
      const uid = uidOf.get(name) ?? ''
      if (!everReady.has(uid)) continue
      const { row, matched } = cnsRow(request, name)
      const allocations = row?.allocations as { read?: boolean; pods?: number; inFlight?: boolean } | undefined
      const since = drainingSince.get(uid)
      const ok =
        since !== undefined &&
        matched &&
        row?.unschedulable === true &&
        allocations?.read === true &&
        allocations.pods === 0 &&
        allocations.inFlight !== true &&
        new Date(request.parent.metadata.deletionTimestamp ?? 0).getTime() === 0 &&
        at - since >= 30_000
      if (!ok) throw new Error(`${name} deleted: row ${JSON.stringify(row)}, matched ${String(matched)}, draining since ${String(since)}`)
    }
    type Row = { phase: string; readyOnce?: boolean; guestUID?: string }
    for (const c of (answer.status as { cells?: Row[] }).cells ?? []) {
      if (c.guestUID === undefined) continue
      if (c.readyOnce === true) everReady.add(c.guestUID)
      if (c.phase === 'Draining' || c.phase === 'Deleting') {
        if (!drainingSince.has(c.guestUID)) drainingSince.set(c.guestUID, at)
      } else drainingSince.delete(c.guestUID)
    }
  }
}

holds(
  'a cell once Ready is deleted only after a drain: its row shows the cordon, allocations read 0, nothing in flight, 30 s after the drain began',
  fc.property(historyArb({ replicas: fc.integer({ min: 1, max: 3 }), minLength: 1, maxLength: 15 }), (h) => {
    const world = settled(h.replicas, h.seed)
    play(world, h.events, drainedBeforeDeleted(world))
  })
)

/** Events that make a cell turn Ready, lose its Node and be scaled away while syncs go stale. */
const readinessEvent: fc.Arbitrary<Event> = fc.oneof(
  { arbitrary: staleSync, weight: 3 },
  {
    arbitrary: fc.record({ kind: fc.constant('nodeReady' as const), cell: fc.integer({ min: 0, max: 2 }), ready: fc.boolean() }),
    weight: 2
  },
  { arbitrary: fc.record({ kind: fc.constant('replicas' as const), n: fc.integer({ min: 0, max: 3 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('wait' as const), seconds: fc.integer({ min: 5, max: 60 }) }), weight: 1 },
  { arbitrary: anyEvent, weight: 1 }
)

holds(
  'from a new pool, a cell once Ready is deleted only after a drain, however stale the syncs around its first Ready',
  fc.property(fc.array(readinessEvent, { minLength: 5, maxLength: 30 }), seedArb, (events, seed) => {
    const world = new PoolWorld(poolSpec({ replicas: 3 }), { seed })
    play(world, events, drainedBeforeDeleted(world))
  }),
  { numRuns: 150 }
)

holds(
  'a guest is first created only when its row says no Node of that name is present',
  fc.property(fc.array(anyEventOrStale, { minLength: 1, maxLength: 15 }), fc.boolean(), seedArb, (events, staleNode, seed) => {
    const world = new PoolWorld(poolSpec({ replicas: 2 }), { seed })
    if (staleNode) world.nodes.set('inference-1', foreignNode('old'))
    play(world, [{ kind: 'wait', seconds: 5 }, ...events], (_e, request) => {
      for (const name of createdGuests(world.operations)) {
        const { row, matched } = cnsRow(request, name)
        if (row === undefined || row.present !== false || !matched)
          throw new Error(`guest ${name} created with row ${JSON.stringify(row)}, matched ${String(matched)}`)
      }
    })
  })
)

const phaseArb = fc.constantFrom<CellPhase>('Pending', 'Joining', 'Ready', 'Draining', 'Deleting', 'Failed', 'AwaitingGPUCapacity')

holds(
  "draining and deleting cells never count toward the autoscaler's base",
  fc.property(fc.array(phaseArb, { maxLength: 8 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 8 }), (phases, min, max) => {
    const cells = phases.map((phase, index) => ({ name: `p-${index}`, index, phase, idle: false, devices: [], creating: false }))
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
  }),
  { numRuns: 200 }
)

const cellArb = fc.record({ phase: fc.constantFrom<CellPhase>('Ready', 'Joining', 'Failed'), draining: fc.boolean() })
holds(
  'a scale-up returns a draining cell to service before building a new one',
  fc.property(fc.array(cellArb, { minLength: 1, maxLength: 6 }), fc.integer({ min: 0, max: 8 }), (specs, desired) => {
    const cells: Cell[] = specs.map((s, index) => {
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
        ownRow: undefined,
        witness: { named: false, readyOnce: false, cordon: false }
      }
    })
    const plan = planScaling({
      pool: 'p',
      cells,
      desired,
      workload: OBSERVED,
      templateHash: 'h',
      updatePolicy: 'Manual',
      specChanged: false,
      now: T0
    })
    const built = plan.cells.some((c) => c.building)
    const stillDraining = plan.cells.some((c) => c.phase === 'Draining' && c.reason === 'ScaleDown')
    return !(built && stillDraining)
  }),
  { numRuns: 300 }
)

/**
 * Properties of the Instance hooks over generated specs and histories (docs/testing.md), each played
 * through Metacontroller's dynamic apply and the API server's defaulting and allocations
 * (tests/support/server-defaults.ts).
 */
import t from 'tap'
import fc from 'fast-check'
import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { InstanceStatusSchema } from '../../hooks/api/instance.ts'
import { sync } from '../../hooks/instance/sync.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import type { JsonObject } from '../support/merge.ts'
import { simulateMetacontroller } from '../support/simulate.ts'
import {
  CHILD_METHODS,
  InstanceWorld,
  NOW,
  POD_STATUS,
  baseSpec,
  instanceType,
  keySecret,
  namespaceObject,
  observedService,
  secret,
  storageClass
} from './fixtures/instance.ts'

const RUNS = { numRuns: 60 }

// The CRD's status schema says `format: date-time`; the API server checks RFC 3339.
if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v))

interface Port {
  port: number
  protocol: 'TCP' | 'UDP' | 'SCTP'
  name?: string
}

/** Valid `spec.ports`: distinct port numbers (a number with two protocols is a spec error). */
const portsArb: fc.Arbitrary<Port[]> = fc
  .uniqueArray(
    fc.record({
      port: fc.constantFrom(22, 53, 80, 443, 6006, 8888, 9000),
      protocol: fc.constantFrom('TCP' as const, 'UDP' as const, 'SCTP' as const),
      name: fc.option(fc.constantFrom('web', 'api', 'tb'), { nil: undefined })
    }),
    { selector: (p) => p.port, maxLength: 5 }
  )
  .map((ports) => {
    const seen = new Set<string>()
    return ports.map((p) => {
      const out: Port = { port: p.port, protocol: p.protocol }
      if (p.name !== undefined && !seen.has(p.name)) {
        seen.add(p.name)
        out.name = p.name
      }
      return out
    })
  })

interface Shape {
  ports: Port[]
  ssh: boolean
  stop: boolean
  /** A persistent workspace's size (a shrink or a removal is what admission refuses, kept by the hook), or none. */
  persistent?: string
}
const shapeArb: fc.Arbitrary<Shape> = fc.record({
  ports: portsArb,
  ssh: fc.boolean(),
  stop: fc.boolean(),
  persistent: fc.option(fc.constantFrom('1Gi', '1024Mi', '2Gi'), { nil: undefined })
})

/** The spec of a shape; with SSH on, port 22 may only be 22/TCP, so other 22 entries are dropped. */
function specOf(shape: Shape): Record<string, unknown> {
  const ports = shape.ssh ? shape.ports.filter((p) => p.port !== 22 || p.protocol === 'TCP') : shape.ports
  return baseSpec({
    ...(ports.length > 0 ? { ports } : {}),
    ...(shape.ssh ? { sshPublicKey: { name: 'keys' } } : {}),
    ...(shape.persistent !== undefined ? { workspace: { persistent: { size: shape.persistent } } } : {}),
    stop: shape.stop
  })
}

const related = (): KubeObject[] => [
  instanceType(),
  namespaceObject(),
  keySecret(),
  storageClass('standard', { isDefault: true, expands: true })
]

/** A world that has run `history` (each step an edit, settled), Pod status stamped running. */
function worldAfter(history: readonly Shape[], seed: number): InstanceWorld {
  const [first, ...rest] = history
  const world = new InstanceWorld(specOf(first ?? { ports: [], ssh: false, stop: false }), { related: related(), seed })
  world.settle(sync)
  for (const shape of rest) {
    world.stampPod(POD_STATUS.running)
    const spec = specOf(shape)
    world.edit({ ports: spec.ports, sshPublicKey: spec.sshPublicKey, workspace: spec.workspace, stop: spec.stop })
    world.settle(sync)
  }
  world.stampPod(POD_STATUS.running)
  return world
}

const historyArb = fc.array(shapeArb, { minLength: 1, maxLength: 5 })
const seedArb = fc.integer({ min: 1, max: 1_000_000 })

t.test('determinism: the same request gives the same response, byte for byte', async (t) => {
  fc.assert(
    fc.property(historyArb, seedArb, (history, seed) => {
      const request = worldAfter(history, seed).request()
      const reordered = structuredClone(request)
      reordered.children = Object.fromEntries(Object.entries(reordered.children).reverse())
      const once = JSON.stringify(sync(request, NOW))
      return once === JSON.stringify(sync(structuredClone(request), NOW)) && once === JSON.stringify(sync(reordered, NOW))
    }),
    RUNS
  )
  t.pass('held')
})

t.test('every status fits the CRD status schema, so nothing is pruned when it is written', async (t) => {
  fc.assert(
    fc.property(historyArb, fc.boolean(), seedArb, (history, finalizing, seed) => {
      const world = worldAfter(history, seed)
      const status = sync(world.request(finalizing), NOW).status
      const errors = [...Value.Errors(InstanceStatusSchema, status)].map((e) => `${e.path}: ${e.message}`)
      if (errors.length > 0) throw new Error(errors.join('; '))
      if (JSON.stringify(status).includes('null')) throw new Error('a null in status')
      // Structural pruning drops fields the schema does not declare.
      const pruned = Value.Clean(InstanceStatusSchema, structuredClone(status))
      if (JSON.stringify(pruned) !== JSON.stringify(status)) throw new Error('the schema prunes part of the status')
    }),
    RUNS
  )
  t.pass('held')
})

t.test('convergence: after any edit the children settle, and a settled state is a fixed point', async (t) => {
  fc.assert(
    fc.property(historyArb, shapeArb, seedArb, (history, next, seed) => {
      const world = worldAfter(history, seed)
      const spec = specOf(next)
      world.edit({ ports: spec.ports, sshPublicKey: spec.sshPublicKey, workspace: spec.workspace, stop: spec.stop })
      const operations: string[] = []
      // The longest path: old Pod deleted; new Pod created and Service ports changed; the
      // allocated node ports recorded in the Service's last-applied annotation; nothing.
      let answer = world.pass(sync)
      operations.push(...world.operations)
      const serviceSpec = JSON.stringify(world.service()?.spec)
      for (let i = 0; world.writes > 0; i++) {
        if (i === 3) throw new Error(`no fixed point after 4 passes: ${operations.join(', ')}`)
        answer = world.pass(sync)
        operations.push(...world.operations)
      }
      // The Service's spec is right after the first pass: later passes only record node ports.
      if (JSON.stringify(world.service()?.spec) !== serviceSpec) throw new Error('the Service spec changed after the first pass')
      // A kept Pod is answered exactly as applied: Metacontroller never sees a diff it would skip.
      const skipped = operations.filter((op) => op.startsWith('unchanged (OnDelete)'))
      if (skipped.length > 0) throw new Error(`a Pod differs from its answer: ${skipped.join(', ')}`)
      const again = world.pass(sync)
      if (world.writes !== 0) throw new Error(`a settled state wrote: ${world.operations.join(', ')}`)
      if (JSON.stringify(again) !== JSON.stringify(answer)) throw new Error('a settled state answered differently')
    }),
    RUNS
  )
  t.pass('held')
})

/** Ways to make a valid Instance invalid, each with the related objects it needs. */
const corruptions: Array<{ name: string; apply: (world: InstanceWorld) => void }> = [
  { name: 'image removed', apply: (w) => w.edit({ image: undefined }) },
  {
    name: 'one port number with two protocols',
    apply: (w) =>
      w.edit({
        ports: [
          { port: 8000, protocol: 'TCP' },
          { port: 8000, protocol: 'UDP' }
        ]
      })
  },
  {
    name: 'InstanceType deleted',
    apply: (w) => {
      w.related = w.related.filter((o) => o.kind !== 'InstanceType')
    }
  },
  { name: 'unknown InstanceType named', apply: (w) => w.edit({ type: 'nope' }) },
  {
    name: 'SSH key Secret deleted',
    apply: (w) => {
      w.edit({ sshPublicKey: { name: 'keys' } })
      w.related = w.related.filter((o) => o.kind !== 'Secret')
    }
  },
  {
    name: 'SSH key Secret without authorized_keys',
    apply: (w) => {
      w.edit({ sshPublicKey: { name: 'other' } })
      w.related.push(secret('other', { x: 'eA==' }))
    }
  },
  {
    name: 'Pod Security baseline with SSH',
    apply: (w) => {
      w.edit({ sshPublicKey: { name: 'keys' } })
      w.related = [
        ...w.related.filter((o) => o.kind !== 'Namespace'),
        namespaceObject({ 'pod-security.kubernetes.io/enforce': 'baseline' })
      ]
    }
  },
  { name: 'accelerator not offered', apply: (w) => w.edit({ resources: { accelerator: { family: 'Sliced', memoryMiB: 1024 } } }) },
  {
    name: 'InstanceType lifecycle malformed',
    apply: (w) => {
      w.related = [
        ...w.related.filter((o) => o.kind !== 'InstanceType'),
        instanceType({ families: ['Whole', 'Shared'], lifecycle: { idleStopAfter: 'soon' } })
      ]
    }
  },
  {
    name: 'Service name taken',
    apply: (w) => {
      w.observed['Service.v1'] = {}
      w.related.push(observedService([{ port: 1234, nodePort: 30999 }]))
    }
  }
]

t.test('nothing lost: for any invalid spec the answer keeps every observed child unchanged', async (t) => {
  fc.assert(
    fc.property(historyArb, fc.constantFrom(...corruptions), shapeArb, seedArb, (history, corruption, edit, seed) => {
      const world = worldAfter(history, seed)
      const spec = specOf(edit)
      world.edit({ ports: spec.ports, stop: spec.stop })
      corruption.apply(world)
      const children = world.children()
      const answer = sync(world.request(), NOW)
      const specValid = (answer.status.conditions as Array<{ type: string; status: string }>).find((c) => c.type === 'SpecValid')
      if (specValid?.status !== 'False') throw new Error(`${corruption.name}: SpecValid is ${String(specValid?.status)}`)
      // stop: true is the user's own request to remove the Pod and is acted on despite the error.
      const stopping = world.parent.spec.stop === true
      // The InstanceActivity goes with the Pod.
      const kept = children.filter((c) => !(stopping && (c.kind === 'Pod' || c.kind === 'InstanceActivity'))).map(keepAsIs)
      const answered = answer.children as KubeObject[]
      if (JSON.stringify(answered) !== JSON.stringify(kept)) throw new Error(`${corruption.name}: children changed`)
      if (stopping) return
      const result = simulateMetacontroller({
        parent: world.parent as unknown as JsonObject,
        observed: world.observed,
        desired: answered as unknown as JsonObject[],
        methods: CHILD_METHODS,
        server: world.server
      })
      if (result.writes !== 0) throw new Error(`${corruption.name}: applying wrote ${result.operations.join(', ')}`)
    }),
    RUNS
  )
  t.pass('held')
})

t.test('a workspace claim, once made, survives any history of edits, stops, starts and spec errors', async (t) => {
  fc.assert(
    fc.property(historyArb, fc.constantFrom(...corruptions), seedArb, (history, corruption, seed) => {
      const world = new InstanceWorld(specOf({ ports: [], ssh: false, stop: false, persistent: '1Gi' }), { related: related(), seed })
      world.settle(sync)
      const uid = world.workspaceClaim()?.metadata.uid
      if (uid === undefined) throw new Error('no claim made')
      const same = (when: string) => {
        if (world.workspaceClaim()?.metadata.uid !== uid) throw new Error(`the claim went ${when}`)
      }
      for (const shape of history) {
        world.stampPod(POD_STATUS.running)
        const spec = specOf(shape)
        world.edit({ ports: spec.ports, sshPublicKey: spec.sshPublicKey, workspace: spec.workspace, stop: spec.stop })
        world.settle(sync)
        same(`after ${JSON.stringify(shape)}`)
      }
      corruption.apply(world)
      world.settle(sync)
      same(`after ${corruption.name}`)
    }),
    RUNS
  )
  t.pass('held')
})

/** One step of a user's history. */
type Step = { kind: 'stop' } | { kind: 'start' } | { kind: 'edit'; ports: Port[]; ssh: boolean }
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.constant<Step>({ kind: 'stop' }),
  fc.constant<Step>({ kind: 'start' }),
  fc.record({ kind: fc.constant('edit' as const), ports: portsArb, ssh: fc.boolean() })
)

t.test('an unchanged (port, protocol) keeps its node port across any sequence of stop, edit and start', async (t) => {
  fc.assert(
    fc.property(shapeArb, fc.array(stepArb, { minLength: 1, maxLength: 10 }), seedArb, (first, steps, seed) => {
      const world = worldAfter([first], seed)
      let held = world.nodePorts()
      for (const step of steps) {
        const stoppedBefore = world.parent.spec.stop === true
        if (step.kind === 'stop') world.edit({ stop: true })
        else if (step.kind === 'start') world.edit({ stop: false })
        else {
          const spec = specOf({ ports: step.ports, ssh: step.ssh, stop: stoppedBefore })
          world.edit({ ports: spec.ports, sshPublicKey: spec.sshPublicKey })
        }
        world.settle(sync)
        const now = world.nodePorts()
        for (const [identity, nodePort] of Object.entries(now)) {
          if (identity in held && held[identity] !== nodePort) {
            throw new Error(`${identity} moved from node port ${String(held[identity])} to ${nodePort} after ${JSON.stringify(step)}`)
          }
        }
        if (stoppedBefore && world.parent.spec.stop === true && JSON.stringify(now) !== JSON.stringify(held)) {
          throw new Error(`the Service changed while stopped after ${JSON.stringify(step)}`)
        }
        // An identity dropped from the Service gives its node port up; one that stays keeps it.
        held = now
      }
    }),
    RUNS
  )
  t.pass('held')
})

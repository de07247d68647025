/**
 * One renderer per answer (docs/style.md rule 19): sync, the blocked answer and teardown each say
 * what to do as a plan, and answer/render.ts alone turns a plan into children, CellNodeSet
 * entries, status rows and the resync.
 */
import t from 'tap'
import type { GPUCellPoolStatus } from '../../hooks/api/gpucellpool.ts'
import { renderAnswer, type AnswerContext } from '../../hooks/cellpool/answer/render.ts'
import { readCells } from '../../hooks/cellpool/cells/cell.ts'
import { phaseConfig } from '../../hooks/cellpool/cells/phases.ts'
import type { AnswerPlan, CellOutcome, DecidedRow } from '../../hooks/cellpool/model/answer.ts'
import type { CellAnswer } from '../../hooks/cellpool/model/plan.ts'
import { provisionerOf } from '../../hooks/cellpool/provisioners/choose.ts'
import { readPool } from '../../hooks/cellpool/request/request.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { NS, OBSERVED, POOL, POOL_UID, T0, T0_STAMP, poolSpec, request } from './fixtures/cellpool.ts'

const labels = (index: number): Record<string, string> => ({
  'app.kubernetes.io/managed-by': 'gpuhooks',
  'cells.kubeswift.io/cell': `${POOL}-${index}`,
  'cells.kubeswift.io/cell-index': String(index),
  'cells.kubeswift.io/pool': POOL,
  'cells.kubeswift.io/pool-uid': POOL_UID
})
const child = (kind: string, apiVersion: string, name: string, index: number, uid?: string): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, namespace: NS, labels: labels(index), ...(uid !== undefined ? { uid } : {}) }
})
/** Cell 0 with all three children observed, its guest `uid-0`. */
const CELL_0 = [
  child('Secret', 'v1', `${POOL}-0-bootstrap`, 0),
  child('SwiftSeedProfile', 'seed.kubeswift.io/v1alpha1', `${POOL}-0-seed`, 0),
  child('SwiftGuest', 'swift.kubeswift.io/v1alpha1', `${POOL}-0`, 0, 'uid-0')
]
const STRAY = child('SwiftGuest', 'swift.kubeswift.io/v1alpha1', `${POOL}-7`, 3, 'uid-stray')
const CNS: KubeObject = {
  apiVersion: 'cells.kubeswift.io/v1alpha1',
  kind: 'CellNodeSet',
  metadata: { name: POOL, namespace: NS, labels: { 'cells.kubeswift.io/pool': POOL, 'cells.kubeswift.io/pool-uid': POOL_UID } },
  spec: { kept: 'as observed' }
}

/** The context of a pool whose observed children are `children`. */
function context(children: KubeObject[]): AnswerContext {
  const provisioner = provisionerOf(poolSpec())
  const view = readPool(request({ children }), provisioner)
  return { view, pool: resolvePool(view.spec), provisioner, workload: OBSERVED, template: 'join {{ nodeLabels }}', now: T0 }
}

const row = (index: number, phase: DecidedRow['phase']): DecidedRow => ({
  index,
  name: `${POOL}-${index}`,
  phase,
  reason: 'Because',
  message: 'As decided.',
  lastTransitionTime: T0_STAMP,
  readyOnce: false,
  failureCount: 0,
  building: false,
  templateHash: undefined
})

/** A plan for cell 0 alone (as `context` reads it) with `answer`, and nothing else. */
function plan(ctx: AnswerContext, answer: CellAnswer, extra: Partial<AnswerPlan> = {}, outcome: Partial<CellOutcome> = {}): AnswerPlan {
  const [cell] = readCells(ctx.view, ctx.workload, phaseConfig(ctx.pool), '', ctx.now)
  return {
    cells: [{ index: 0, cell, answer, createGuest: false, ...outcome }],
    nodeSet: 'none',
    poolChild: 'none',
    kept: [],
    status: {
      desired: 1,
      progressing: { type: 'Progressing', status: 'False', reason: 'Settled', message: 'Nothing to do.' },
      updated: { type: 'Updated', status: 'True', reason: 'UpToDate', message: 'Up to date.' },
      autoscale: undefined
    },
    deadlines: [],
    ...extra
  }
}

const names = (children: readonly { kind?: string; metadata: { name?: string } }[]): string[] =>
  children.map((c) => `${c.kind ?? ''}/${c.metadata.name ?? ''}`)
const specOf = (answer: { children: readonly unknown[] }, i: number): unknown => (answer.children[i] as KubeObject | undefined)?.spec

t.test('each answer of a cell carries the children it names, in role order', async (t) => {
  const ctx = context(CELL_0)
  const expected: Record<CellAnswer, string[]> = {
    serve: [`Secret/${POOL}-0-bootstrap`, `SwiftSeedProfile/${POOL}-0-seed`, `SwiftGuest/${POOL}-0`],
    hold: [`Secret/${POOL}-0-bootstrap`, `SwiftSeedProfile/${POOL}-0-seed`, `SwiftGuest/${POOL}-0`],
    remove: [`Secret/${POOL}-0-bootstrap`, `SwiftSeedProfile/${POOL}-0-seed`],
    withoutGuest: [`Secret/${POOL}-0-bootstrap`, `SwiftSeedProfile/${POOL}-0-seed`],
    none: []
  }
  for (const [answer, children] of Object.entries(expected)) {
    t.same(names(renderAnswer(plan(ctx, answer as CellAnswer), ctx).children), children, answer)
  }
  const noGuest = context(CELL_0.slice(0, 2))
  t.same(names(renderAnswer(plan(noGuest, 'remove'), noGuest).children), [], 'remove: nothing once the guest is gone')
  t.same(
    names(renderAnswer(plan(noGuest, 'withoutGuest'), noGuest).children),
    [`Secret/${POOL}-0-bootstrap`, `SwiftSeedProfile/${POOL}-0-seed`],
    'withoutGuest: the Secret and seed stay whether or not its own guest is there'
  )
})

t.test('a new cell: its children are built, its entry goes into a CellNodeSet built with the demand', async (t) => {
  const ctx = context([])
  const answer = renderAnswer(
    {
      ...plan(ctx, 'serve', { nodeSet: { demand: true } }),
      cells: [{ index: 1, cell: undefined, answer: 'serve', createGuest: true, entry: { cordon: false, readyOnce: false } }]
    },
    ctx
  )
  t.same(names(answer.children), [
    `Secret/${POOL}-1-bootstrap`,
    `SwiftSeedProfile/${POOL}-1-seed`,
    `SwiftGuest/${POOL}-1`,
    `CellNodeSet/${POOL}`
  ])
  const spec = specOf(answer, 3) as { nodes: Array<{ name: string; cordon: boolean }>; demand?: unknown }
  t.same(
    spec.nodes.map((n) => [n.name, n.cordon]),
    [[`${POOL}-1`, false]]
  )
  t.ok(spec.demand, 'the demand the agent reads')
  t.notOk('finalized' in answer, 'no finalized unless the plan says')
  t.notOk('resyncAfterSeconds' in answer, 'no resync without a deadline')
})

t.test('kept as observed: the CellNodeSet, the pool child and the strays, after the cells', async (t) => {
  const ctx = context([...CELL_0, CNS, STRAY])
  const answer = renderAnswer(plan(ctx, 'hold', { nodeSet: 'keep', poolChild: 'keep', kept: ctx.view.strays }), ctx)
  t.same(names(answer.children), [...names(CELL_0), `CellNodeSet/${POOL}`, `SwiftGuest/${POOL}-7`])
  t.same(specOf(answer, 3), { kept: 'as observed' }, 'the CellNodeSet exactly as it is')
  const nothing = context(CELL_0)
  t.same(
    names(renderAnswer(plan(nothing, 'hold', { nodeSet: 'keep', poolChild: 'keep' }), nothing).children),
    names(CELL_0),
    'keeping what is not observed adds nothing'
  )
})

t.test('the status rows, finalized and the resync come from the plan', async (t) => {
  const ctx = context(CELL_0)
  const answer = renderAnswer(
    plan(
      ctx,
      'hold',
      { deadlines: [undefined, new Date(T0.getTime() + 90_500), new Date(T0.getTime() + 200_000)], finalized: false },
      { row: row(0, 'Draining') }
    ),
    ctx
  )
  const status = answer.status as GPUCellPoolStatus
  t.same(
    status.cells?.map((c) => [c.name, c.phase, c.guestUID]),
    [[`${POOL}-0`, 'Draining', 'uid-0']],
    'the decided row with what was observed of the cell'
  )
  t.equal(status.desiredReplicas, 1)
  t.equal(answer.finalized, false)
  t.equal(answer.resyncAfterSeconds, 91, 'the nearest deadline, rounded up')
  const noRow = renderAnswer(plan(ctx, 'hold'), ctx)
  t.same((noRow.status as GPUCellPoolStatus).cells, [], 'a cell without a decided row has none')
})

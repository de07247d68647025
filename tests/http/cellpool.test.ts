/**
 * The cellpool sync and finalize hooks through inject, on the app the factory `main` uses: 200
 * with only the documented response fields, 400 naming the field for wrongly shaped requests, and
 * 200 (never 500) for children and related objects of unexpected shapes.
 */
import t from 'tap'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { sync } from '../../hooks/cellpool/hooks.ts'
import { malformedComposite, poster } from './support/inject.ts'
import { PoolWorld, T0, joinSecret, poolObject, poolSpec, request } from '../unit/fixtures/cellpool.ts'

const app = await buildApp({ routes, clock: () => T0 })
t.teardown(() => app.close())

const post = poster(app)

const COMPOSITE = ['children', 'finalized', 'resyncAfterSeconds', 'status']
const conditionOf = (body: Record<string, unknown>, type: string) =>
  (body.status as { conditions: Array<{ type: string; status: string; reason: string; message: string }> }).conditions.find(
    (c) => c.type === type
  )

t.test('cellpool sync answers 200 with children and a full status only', async (t) => {
  const res = await post('/hooks/cellpool/sync', request())
  t.equal(res.status, 200)
  t.same(
    Object.keys(res.body).filter((k) => !COMPOSITE.includes(k)),
    []
  )
  t.same(
    (res.body.children as Array<{ kind: string }>).map((c) => c.kind),
    ['CellNodeSet']
  )
  t.equal((res.body.status as { selector: string }).selector, 'cells.kubeswift.io/pool=inference')
})

t.test("the HTTP answer is the pure hook's answer", async (t) => {
  const world = new PoolWorld()
  world.settle(sync)
  const req = world.request()
  const res = await post('/hooks/cellpool/sync', req)
  t.equal(res.status, 200)
  t.same(res.body, JSON.parse(JSON.stringify(sync(req, T0))))
})

t.test('cellpool finalize answers 200 and finalized once nothing is observed', async (t) => {
  const res = await post(
    '/hooks/cellpool/finalize',
    request({ parent: poolObject(poolSpec(), { deleting: '2026-03-01T09:59:00Z' }), finalizing: true })
  )
  t.equal(res.status, 200)
  t.same(
    Object.keys(res.body).filter((k) => !COMPOSITE.includes(k)),
    []
  )
  t.same(res.body.children, [])
  t.equal(res.body.finalized, true)
})

t.test('a spec error is not an HTTP error: 200 with Progressing False, SpecInvalid', async (t) => {
  const res = await post('/hooks/cellpool/sync', request({ parent: poolObject(poolSpec({ cell: { gpu: { count: 2 } } })) }))
  t.equal(res.status, 200)
  t.same([conditionOf(res.body, 'Progressing')?.status, conditionOf(res.body, 'Progressing')?.reason], ['False', 'SpecInvalid'])
})

const malformed = malformedComposite('/hooks/cellpool', poolObject())
for (const row of malformed) {
  t.test(`${row.name} answers 400 naming ${row.field}`, async (t) => {
    const res = await post(row.url, row.payload)
    t.equal(res.status, 400)
    t.ok((res.body.fields as string[]).includes(row.field), `fields ${JSON.stringify(res.body.fields)} name ${row.field}`)
  })
}

t.test('children and related objects of unexpected shapes answer 200, reported in status', async (t) => {
  const world = new PoolWorld()
  world.settle(sync)
  const req = world.request() as unknown as {
    children: Record<string, Record<string, Record<string, unknown>>>
    related: Record<string, Record<string, Record<string, unknown>>>
    parent: Record<string, unknown>
  }
  for (const guest of Object.values(req.children['SwiftGuest.swift.kubeswift.io/v1alpha1'] ?? {})) guest.status = 'Running'
  for (const cns of Object.values(req.children['CellNodeSet.cells.kubeswift.io/v1alpha1'] ?? {}))
    cns.status = { nodes: { 'inference-0': true }, conditions: 'Reachable', demand: [] }
  for (const seed of Object.values(req.children['SwiftSeedProfile.seed.kubeswift.io/v1alpha1'] ?? {})) seed.spec = 42
  req.parent.status = { cells: [{ name: 7 }, 'x', null], desiredReplicas: 'two' }
  const res = await post('/hooks/cellpool/sync', req)
  t.equal(res.status, 200)
  t.match(conditionOf(res.body, 'Progressing')?.message, /Unreadable: SwiftGuest inference-0: status is a string, not an object/)
  const bad = joinSecret()
  bad.data = ['user-data'] as unknown
  const secretRes = await post('/hooks/cellpool/sync', request({ related: [bad] }))
  t.equal(secretRes.status, 200)
})

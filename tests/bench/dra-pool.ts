/**
 * `npm run bench:dra` (docs/benchmarks.md, "A DRA pool's sync and the cluster's claims"): the size
 * of a DRA cell pool's sync request and the hook's time on it, with 0, 5,000 and 20,000
 * ResourceClaims in the infrastructure cluster, in two forms:
 *
 * - **before**: the request as Metacontroller sent it while customize related every ResourceSlice
 *   and every ResourceClaim of the cluster (the physical-GPU check counted them in the hook);
 * - **after**: the request now: the agent's four counts in the CellNodeSet status, the pool's
 *   claim template related by name.
 *
 * The pool is the unit fixtures' DRA pool of 4 Ready cells in its steady state. Claims are
 * allocated as a VM's and a Pod's are (about 1 KiB each), 1 in 10 on KubeSwift's GPU driver,
 * over ResourceSlices of 8 devices each. Each figure is the median of sequential in-process
 * requests (`inject`, no socket) after a warm-up; nothing here asserts a timing.
 *
 * `GPUHOOKS_BENCH_BEFORE=<checkout>` answers the "before" requests with that checkout's hook
 * service (for example one of main before this change), so that its hook counts the related
 * objects as it did; without it this checkout's service answers them (it reads only the template).
 */
import { performance } from 'node:perf_hooks'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { sync } from '../../hooks/cellpool/hooks.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { objectKey } from '../../hooks/metacontroller/observed.ts'
import { PoolWorld, poolSpec } from '../unit/fixtures/cellpool.ts'
import { claimTemplate } from '../unit/fixtures/dra-inventory.ts'

const COUNTS = [0, 5000, 20_000] as const
const WARMUP = 3
const RUNS = 15
const DRA = 'resource.k8s.io/v1'
const GPU_DRIVER = 'gpu.kubeswift.io'

interface App {
  inject(options: { method: 'POST'; url: string; payload: string; headers: Record<string, string> }): Promise<{
    statusCode: number
    body: string
  }>
  close(): Promise<unknown>
}

async function appFrom(root: string, now: Date): Promise<App> {
  const { buildApp } = (await import(pathToFileURL(join(root, 'hooks/server/app.ts')).href)) as {
    buildApp: (o: unknown) => Promise<App>
  }
  const { routes } = (await import(pathToFileURL(join(root, 'hooks/server/routes.ts')).href)) as { routes: unknown }
  return buildApp({ routes, logger: false, clock: () => now })
}

const hex = (n: number): string => n.toString(16).padStart(12, '0')

/** A ResourceSlice of 8 devices on one host. */
function slice(host: number, driver: string): KubeObject {
  return {
    apiVersion: DRA,
    kind: 'ResourceSlice',
    metadata: { name: `host-${host}-${driver}`, uid: `00000000-0000-4000-8000-${hex(host)}`, resourceVersion: String(1000 + host) },
    spec: {
      driver,
      nodeName: `host-${host}`,
      pool: { name: `host-${host}`, generation: 1, resourceSliceCount: 1 },
      devices: Array.from({ length: 8 }, (_, i) => ({
        name: `gpu-${i}`,
        attributes: { vfioReady: { bool: true }, productName: { string: 'NVIDIA A100-SXM4-80GB' } }
      }))
    }
  }
}

/** An allocated claim of a VM or a Pod in another namespace, reserved for its consumer. */
function claim(i: number): KubeObject {
  const driver = i % 10 === 0 ? GPU_DRIVER : 'gpu.nvidia.com'
  const host = Math.floor(i / 8)
  return {
    apiVersion: DRA,
    kind: 'ResourceClaim',
    metadata: {
      name: `vm-${i}-gpu-x7k2p`,
      namespace: `team-${i % 50}`,
      uid: `00000000-0000-4000-9000-${hex(i)}`,
      resourceVersion: String(500000 + i),
      creationTimestamp: '2026-03-01T09:00:00Z',
      finalizers: ['resource.kubernetes.io/delete-protection'],
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Pod', name: `vm-${i}-launcher`, uid: `00000000-0000-4000-a000-${hex(i)}`, controller: true }
      ]
    },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'vfio-gpu', allocationMode: 'ExactCount', count: 1 } }] } },
    status: {
      allocation: {
        devices: { results: [{ request: 'gpu', driver, pool: `host-${host}`, device: `gpu-${i % 8}` }] },
        nodeSelector: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [`host-${host}`] }] }] }
      },
      reservedFor: [{ resource: 'pods', name: `vm-${i}-launcher`, uid: `00000000-0000-4000-a000-${hex(i)}` }]
    }
  }
}

/** The steady-state request of a DRA pool of 4 Ready cells, and the time it holds at. */
function steadyRequest(): { request: Record<string, unknown>; now: Date } {
  const world = new PoolWorld(poolSpec({ replicas: 4 }))
  world.settle(sync)
  const request = world.request() as unknown as Record<string, unknown>
  const template = claimTemplate()
  request.related = {
    ...(request.related as object),
    [`ResourceClaimTemplate.${DRA}`]: { [objectKey(String(template.metadata.name), template.metadata.namespace)]: template }
  }
  return { request, now: world.now }
}

/** The request as main's customize had it related: every slice and claim. */
function beforeRequest(base: Record<string, unknown>, claims: number): Record<string, unknown> {
  const request = structuredClone(base)
  const hosts = Math.max(1, Math.ceil(claims / 8))
  const slices = Array.from({ length: hosts }, (_, h) => slice(h, h % 10 === 0 ? GPU_DRIVER : 'gpu.nvidia.com'))
  const all = Array.from({ length: claims }, (_, i) => claim(i))
  request.related = {
    ...(request.related as object),
    [`ResourceSlice.${DRA}`]: Object.fromEntries(slices.map((s) => [String(s.metadata.name), s])),
    [`ResourceClaim.${DRA}`]: Object.fromEntries(all.map((c) => [objectKey(String(c.metadata.name), c.metadata.namespace), c]))
  }
  // main's CellNodeSet carries no summary.
  for (const cns of Object.values(
    (request.children as Record<string, Record<string, { status?: Record<string, unknown> }>>)['CellNodeSet.cells.kubeswift.io/v1alpha1'] ??
      {}
  )) {
    delete cns.status?.physicalGPUs
  }
  return request
}

/** The median time of a 200 answer, or the status of a refusal (413: past the body limit). */
async function median(app: App, body: string): Promise<number | string> {
  const once = async (): Promise<number | string> => {
    const start = performance.now()
    const res = await app.inject({
      method: 'POST',
      url: '/hooks/cellpool/sync',
      payload: body,
      headers: { 'content-type': 'application/json' }
    })
    const ms = performance.now() - start
    if (res.statusCode !== 200) return `HTTP ${res.statusCode}`
    if (!res.body.includes('PhysicalGPUsAvailable')) throw new Error('the answer carries no PhysicalGPUsAvailable condition')
    return ms
  }
  const first = await once()
  if (typeof first === 'string') return first
  for (let i = 1; i < WARMUP; i++) await once()
  const times: number[] = []
  for (let i = 0; i < RUNS; i++) times.push(Number(await once()))
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)] as number
}

const beforeRoot = process.env['GPUHOOKS_BENCH_BEFORE']
const { request: base, now } = steadyRequest()
const after = await appFrom(resolve(import.meta.dirname, '../..'), now)
const before = beforeRoot === undefined ? after : await appFrom(resolve(beforeRoot), now)
const MiB = 1024 * 1024
console.log(`DRA pool sync, 4 Ready cells; before answered by ${beforeRoot ?? 'this checkout'}; median of ${RUNS} requests`)
console.log('| claims in the cluster | before: request | before: hook | after: request | after: hook |')
console.log('| ---: | ---: | ---: | ---: | ---: |')
for (const claims of COUNTS) {
  const old = JSON.stringify(beforeRequest(base, claims))
  const now = JSON.stringify(base)
  const oldMs = await median(before, old)
  const nowMs = await median(after, now)
  const size = (b: string): string => `${(Buffer.byteLength(b) / MiB).toFixed(2)} MiB`
  const ms = (m: number | string): string => (typeof m === 'string' ? `${m} (past the 16 MiB body limit)` : `${m.toFixed(1)} ms`)
  console.log(`| ${claims.toLocaleString('en')} | ${size(old)} | ${ms(oldMs)} | ${size(now)} | ${ms(nowMs)} |`)
}
await after.close()
if (before !== after) await before.close()

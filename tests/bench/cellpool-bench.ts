/**
 * The GPUCellPool row of `npm run bench:cluster`: one pool with `cells` replicas, brought from
 * nothing to `cells` Ready cells by the `gpuhooks-cellpool` driver, with KubeSwift and the
 * workload agent played as tests/cluster/41-cellpool.test.ts plays them. A round is: the pool
 * synced until a pass writes nothing (at most 6 passes, as the scenario's rounds), then every guest
 * without a status stamped Running with its GPU and addresses, then the CellNodeSet's status
 * stamped with a present, live, ready row with one device per running guest. The controller
 * creates at most two cells at once (cellpool.md), so N cells take about N/2 rounds.
 *
 * Measured: time to convergence, cellpool hook calls and the service CPU charged to them (the
 * caller's metered transport), and the largest sync request and response in bytes.
 */
import type { ClusterEnv } from '../cluster/support/env.ts'
import type { HookTransport } from '../cluster/support/driver-protocol.ts'
import { Driver } from '../cluster/support/driver.ts'
import type { ResourceRef } from '../cluster/support/kube.ts'
import { isObject, type JsonObject } from '../support/merge.ts'

const CELLS = 'cells.kubeswift.io/v1alpha1'
const NS = 'bench-cells'
const POOL = 'gpus'
const JOIN = '#cloud-config\nruncmd:\n  - kubeadm join --node-name {{ nodeName }} --node-labels {{ nodeLabels }}\n'

/** What the pool scenario measured. */
export interface CellpoolResult {
  cells: number
  seconds: number
  rounds: number
  calls: number
  syncCalls: number
  largestSyncRequest: number
  largestSyncResponse: number
  mostCreating: number
  errors: number
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '')
const obj = (v: unknown): JsonObject => (isObject(v) ? v : {})

/** The pool of deploy/examples/cellpool.yaml's shape, with `replicas` cells. */
function poolObject(replicas: number): JsonObject {
  return {
    apiVersion: CELLS,
    kind: 'GPUCellPool',
    metadata: { name: POOL, namespace: NS },
    spec: {
      replicas,
      cell: {
        guestTemplate: {
          guestClassRef: { name: 'gpu-worker-32c-128g' },
          imageRef: { name: 'gpu-worker-noble-570' },
          interfaces: [{ name: 'primary' }, { name: 'routable', networkRef: { name: 'cell-lan' } }]
        },
        gpu: { backend: 'DRA', dra: { resourceClaimTemplateName: 'single-vfio-gpu' } },
        nodeIPFrom: 'routable'
      },
      bootstrap: { joinSecretRef: { name: 'join' } },
      workloadCluster: {
        kubeconfigSecretRef: { name: 'kubeconfig' },
        node: { labels: { gpu: 'on' }, taints: [{ key: 'example.com/gpu-cell', value: 'true', effect: 'NoSchedule' }] }
      },
      updatePolicy: { type: 'Manual' }
    }
  }
}

/**
 * Runs the pool scenario. `transport` is the caller's metered transport for the cellpool
 * controller; the env must have been started with fixtures/kubeswift-crds.yaml.
 */
export async function cellpoolScenario(env: ClusterEnv, cells: number, transport: HookTransport): Promise<CellpoolResult> {
  const { kube, cluster } = env
  await cluster.kubectl(['create', 'namespace', NS])
  await cluster.kubectl(['wait', '--for=create', '-n', NS, 'serviceaccount/default', '--timeout=60s'])
  await cluster.kubectl(['create', 'secret', 'generic', 'join', '-n', NS, `--from-literal=user-data=${JOIN}`])
  await cluster.kubectl(['create', 'secret', 'generic', 'kubeconfig', '-n', NS, '--from-literal=value=apiVersion: v1'])

  let calls = 0
  let syncCalls = 0
  let largestSyncRequest = 0
  let largestSyncResponse = 0
  const sizing: HookTransport = async (url, body, timeoutMs) => {
    const res = await transport(url, body, timeoutMs)
    calls++
    if (url.endsWith('/sync')) {
      syncCalls++
      largestSyncRequest = Math.max(largestSyncRequest, Buffer.byteLength(JSON.stringify(body)))
      largestSyncResponse = Math.max(largestSyncResponse, Buffer.byteLength(res.body))
    }
    return res
  }
  const driver = new Driver({
    kube,
    controller: env.driver('gpuhooks-cellpool').options.controller,
    hookBaseUrl: env.service.hooksUrl,
    transport: sizing
  })
  const poolRef: ResourceRef = { apiVersion: CELLS, resource: 'gpucellpools', namespace: NS, name: POOL }
  const cnsRef: ResourceRef = { apiVersion: CELLS, resource: 'cellnodesets', namespace: NS, name: POOL }
  const guestsRef: ResourceRef = { apiVersion: 'swift.kubeswift.io/v1alpha1', resource: 'swiftguests', namespace: NS }

  /** The workload cluster's Nodes: cell name → the guest uid it runs on. */
  const nodes = new Map<string, string>()
  let errors = 0
  let mostCreating = 0

  const started = performance.now()
  await kube.create({ apiVersion: CELLS, resource: 'gpucellpools', namespace: NS }, poolObject(cells))
  let rounds = 0
  const deadline = Date.now() + Math.max(300, cells * 12) * 1000
  for (;;) {
    rounds++
    // Metacontroller: passes until one writes nothing.
    for (let pass = 0; pass < 6; pass++) {
      try {
        if ((await driver.syncOnce({ namespace: NS, name: POOL })).writes.length === 0) break
      } catch {
        errors++
      }
    }
    // KubeSwift: a guest without a status boots, with its own GPU host and addresses.
    const guests = (await kube.list(guestsRef)).body
    for (const g of guests) {
      const status = obj(g.status)
      const m = obj(g.metadata)
      if (status.phase === 'Running') continue
      const index = Number(/-(\d+)$/.exec(str(m.name))?.[1] ?? 0)
      const primary = `10.0.${Math.floor(index / 250)}.${(index % 250) + 2}`
      g.status = {
        phase: 'Running',
        gpu: { devices: ['0000:3b:00.0'], nodeName: `gpu-host-${index}` },
        network: {
          primaryIP: primary,
          interfaces: [
            { name: 'primary', ip: primary },
            { name: 'routable', ip: `10.20.${Math.floor(index / 250)}.${(index % 250) + 2}` }
          ]
        }
      }
      await kube.updateStatus({ ...guestsRef, name: str(m.name) }, g)
    }
    // The kubelets and the agent: a running guest registers its Node; the agent reports the rows.
    for (const g of guests) {
      const m = obj(g.metadata)
      if (obj(g.status).phase === 'Running' && nodes.get(str(m.name)) !== str(m.uid)) nodes.set(str(m.name), str(m.uid))
    }
    for (const [name, uid] of [...nodes]) if (!guests.some((g) => obj(g.metadata).uid === uid)) nodes.delete(name)
    const cns = (await kube.get(cnsRef).catch(() => undefined))?.body
    if (cns !== undefined) {
      const spec = obj(cns.spec)
      const entries = Array.isArray(spec.nodes) ? spec.nodes.filter(isObject) : []
      cns.status = {
        observedGeneration: obj(cns.metadata).generation ?? 0,
        observedTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        conditions: [{ type: 'Reachable', status: 'True', reason: 'Reachable', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z' }],
        nodeCount: nodes.size,
        nodes: entries.map((entry): JsonObject => {
          const instance = nodes.get(str(entry.name))
          if (instance === undefined) return { name: str(entry.name), present: false }
          return {
            name: str(entry.name),
            present: true,
            instance,
            poolUID: spec.poolUID ?? '',
            live: true,
            ready: true,
            unschedulable: entry.cordon === true && entry.instance === instance,
            devices: [{ id: 'GPU-0', type: 'NVIDIA-A100', memoryMiB: 81920, cores: 100, healthy: true }],
            registration: 'Parsed',
            allocations: { read: true, pods: 0 }
          }
        })
      }
      await kube.updateStatus(cnsRef, cns)
    }
    const pool = (await kube.get(poolRef)).body
    const status = obj(pool.status)
    mostCreating = Math.max(mostCreating, typeof status.creatingCells === 'number' ? status.creatingCells : 0)
    if (status.readyCells === cells) break
    if (Date.now() > deadline) throw new Error(`the pool did not reach ${cells} Ready cells; at ${JSON.stringify(status.readyCells)}`)
  }
  // Converged once a last pass over the Ready pool writes nothing.
  for (let pass = 0; pass < 6; pass++) if ((await driver.syncOnce({ namespace: NS, name: POOL })).writes.length === 0) break
  const seconds = (performance.now() - started) / 1000
  return { cells, seconds, rounds, calls, syncCalls, largestSyncRequest, largestSyncResponse, mostCreating, errors }
}

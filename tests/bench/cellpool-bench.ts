/**
 * The GPUCellPool row of `npm run bench:cluster`: one pool with `cells` replicas, brought from
 * nothing to `cells` Ready cells by the `gpuhooks-cellpool` driver, with KubeSwift and the
 * workload agent played by tests/cluster/support/cellpool.ts, as 41-cellpool.test.ts plays them. A
 * round is: the pool synced until a pass writes nothing (at most 6 passes, as the scenario's
 * rounds), then every guest without a status stamped Running with its GPU and addresses, then the
 * CellNodeSet's status stamped with a present, live, ready row with one device per running guest. The controller
 * creates at most two machines at once and prepares two more cells meanwhile, whose Node names the
 * agent checks in the same round (docs/cellpool.md, "Phases"), so N cells take about N/2 rounds.
 *
 * Measured: time to convergence, cellpool hook calls and the service CPU charged to them (the
 * caller's metered transport), and the largest sync request and response in bytes.
 */
import type { ClusterEnv } from '../cluster/support/env.ts'
import type { HookTransport } from '../cluster/support/driver-protocol.ts'
import { Driver } from '../cluster/support/driver.ts'
import { bootGuests, CELLS, PlayedWorkload, poolManifest, preparePoolNamespace } from '../cluster/support/cellpool.ts'
import { isObject, type JsonObject } from '../support/merge.ts'

const NS = 'bench-cells'
const POOL = 'gpus'

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

const obj = (v: unknown): JsonObject => (isObject(v) ? v : {})

/** The scenarios' pool with `replicas` cells, a taint on its Nodes as deploy/examples/cellpool.yaml has, and manual updates. */
function poolObject(replicas: number): JsonObject {
  return poolManifest(POOL, NS, {
    replicas,
    workloadCluster: { node: { taints: [{ key: 'example.com/gpu-cell', value: 'true', effect: 'NoSchedule' }] } },
    updatePolicy: { type: 'Manual' }
  })
}

/**
 * Runs the pool scenario. `transport` is the caller's metered transport for the cellpool
 * controller; the env must have been started with fixtures/kubeswift-crds.yaml.
 */
export async function cellpoolScenario(env: ClusterEnv, cells: number, transport: HookTransport): Promise<CellpoolResult> {
  const { kube, cluster } = env
  await preparePoolNamespace(cluster, NS)
  await cluster.kubectl(['create', 'secret', 'generic', 'kc', '-n', NS, '--from-literal=value=apiVersion: v1'])

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
  const poolRef = { apiVersion: CELLS, resource: 'gpucellpools', namespace: NS, name: POOL }
  /** The kubelets and the workload agent, played as the cell pool scenario plays them. */
  const workload = new PlayedWorkload(kube, NS)
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
    // KubeSwift boots the new guests; the kubelets register their Nodes; the agent reports the rows.
    await bootGuests(kube, NS)
    await workload.agentPass(POOL)
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

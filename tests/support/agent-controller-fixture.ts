/**
 * The CellNodeSet controller with fake clusters and a fake clock, for the controller's tests
 * (tests/unit/agent-controller.test.ts, agent-lanes.test.ts): an informer cache, an
 * infrastructure cluster that records what is written and read, workload clusters chosen by
 * their kubeconfig's server, and the log lines.
 */
import type { InfraApi, ObjectCache, WorkloadApi } from '../../hooks/agent/model/apis.ts'
import type { PassBounds } from '../../hooks/agent/runtime/config.ts'
import { AgentController } from '../../hooks/agent/nodeset/controller.ts'
import { keyOf } from '../../hooks/k8s/objects.ts'
import { createAgentMetrics } from '../../hooks/agent/runtime/metrics.ts'
import { WorkQueue } from '../../hooks/agent/runtime/queue.ts'
import { FakeClock } from './fake-clock.ts'

export const POOL_UID = 'uid-pool'
const kubeconfig = (server: string): string =>
  `apiVersion: v1\nclusters: [{name: w, cluster: {server: "${server}"}}]\nusers: [{name: a, user: {token: t}}]\ncontexts: [{name: w, context: {cluster: w, user: a}}]\ncurrent-context: w\n`

/** A labelled kubeconfig Secret in `namespace` for the workload cluster at `server`. */
export const secret = (name: string, resourceVersion = '1', server = 'https://10.0.0.1', namespace = 'ns') => ({
  metadata: { name, namespace, resourceVersion, labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } },
  data: { value: Buffer.from(kubeconfig(server)).toString('base64') }
})

/** A CellNodeSet of the pool of its name, naming the Secret `secretName` of its namespace. */
export const cellNodeSet = (name: string, secretName = 'wl', status?: unknown, namespace = 'ns') => ({
  apiVersion: 'cells.kubeswift.io/v1alpha1',
  kind: 'CellNodeSet',
  metadata: {
    name,
    namespace,
    uid: `uid-${name}`,
    generation: 1,
    resourceVersion: '10',
    finalizers: ['cells.kubeswift.io/workload-nodes'],
    ownerReferences: [{ apiVersion: 'cells.kubeswift.io/v1alpha1', kind: 'GPUCellPool', name, uid: POOL_UID, controller: true }]
  },
  spec: { kubeconfigSecretRef: { name: secretName, key: 'value' }, poolUID: POOL_UID, nodes: [] },
  ...(status === undefined ? {} : { status })
})

/** An informer cache: objects by `namespace/name`. */
export class Cache implements ObjectCache {
  readonly objects = new Map<string, unknown>()
  put(object: unknown): void {
    this.objects.set(keyOf(object) as string, object)
  }
  get(name: string, namespace?: string): unknown {
    return this.objects.get(`${namespace ?? ''}/${name}`)
  }
  list(): unknown[] {
    return [...this.objects.values()]
  }
}

/** An infrastructure cluster whose status writes are recorded, and can fail or be held. */
export class FakeInfra implements InfraApi {
  /** The Secrets of the cluster by `namespace/name`, and every read of one. */
  secrets = new Map<string, unknown>()
  secretReads: string[] = []
  writes: string[] = []
  failWrites = 0
  private hold: Promise<void> | undefined
  /** Holds every status write until the returned function is called. */
  holdWrites(): () => void {
    let release = (): void => {}
    this.hold = new Promise<void>((resolve) => (release = resolve))
    return () => {
      this.hold = undefined
      release()
    }
  }
  poolStatus: unknown = undefined
  poolUid = POOL_UID
  async getPool(_namespace: string, name: string): Promise<unknown> {
    return { metadata: { name, uid: this.poolUid }, spec: {}, status: this.poolStatus }
  }
  async getSecret(namespace: string, name: string): Promise<unknown> {
    this.secretReads.push(`${namespace}/${name}`)
    return structuredClone(this.secrets.get(`${namespace}/${name}`))
  }
  /** The last status written, by `namespace/name`. */
  statuses = new Map<string, unknown>()
  async replaceStatus(namespace: string, name: string, _resourceVersion: string, status: unknown): Promise<string | undefined> {
    if (this.hold !== undefined) await this.hold
    this.writes.push(`${namespace}/${name}`)
    this.statuses.set(`${namespace}/${name}`, structuredClone(status))
    if (this.failWrites > 0) {
      this.failWrites--
      throw Object.assign(new Error('Conflict'), { code: 409 })
    }
    return '11'
  }
  async setFinalizers(): Promise<void> {}
  async warn(): Promise<void> {}
  /** The Events as the API server holds them: text and count, by name. */
  events = new Map<string, { text: string; count: number }>()
  failEvents = false
  async poolEvent(pool: { namespace: string; name: string; uid: string }, type: string, reason: string, message: string): Promise<string> {
    if (this.failEvents) throw new Error('events is forbidden')
    const name = `${pool.name}.${this.events.size + 1}`
    this.events.set(name, { text: `${pool.namespace}/${pool.name}@${pool.uid} ${type} ${reason}: ${message}`, count: 1 })
    return name
  }
  async recountEvent(_namespace: string, name: string, count: number): Promise<void> {
    const event = this.events.get(name)
    if (event === undefined) throw Object.assign(new Error('events not found'), { code: 404 })
    event.count = count
  }
  eventList(): string[] {
    return [...this.events.values()].map((e) => `${e.text} x${e.count}`)
  }
}

/** A workload cluster with no Nodes and no Pods. */
export const emptyWorkload: WorkloadApi = {
  listNodes: async () => [],
  getNode: async () => undefined,
  getNodeLease: async () => undefined,
  listPods: async () => [],
  listPodPage: async () => ({ items: [] }),
  listResourceSlices: async () => [],
  listResourceClaimPage: async () => ({ items: [] }),
  getDeviceClass: async () => undefined,
  patchNode: async () => {},
  deleteNode: async () => {}
}

/** What a test may change in {@link setup}. */
export interface SetupOptions {
  active?: boolean
  resyncMs?: number
  bounds?: Partial<Pick<PassBounds, 'timeoutMs' | 'workers' | 'namespaceWorkers' | 'maxPassBytes' | 'maxPendingPods'>>
}

/** A running controller over fake clusters; `state.workloadFor` picks a workload cluster by its server. */
export function setup(options: SetupOptions = {}) {
  const clock = new FakeClock()
  const cellNodeSets = new Cache()
  const infra = new FakeInfra()
  infra.secrets.set('ns/wl', secret('wl'))
  const metrics = createAgentMetrics()
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = []
  const logAt =
    (level: string) =>
    (fields: object, message: string): void => {
      lines.push({ level, message, fields: fields as Record<string, unknown> })
    }
  const log = { debug: logAt('debug'), info: logAt('info'), warn: logAt('warn'), error: logAt('error') }
  const state = {
    active: options.active ?? true,
    builds: 0,
    workload: emptyWorkload as WorkloadApi | Error,
    workloadFor: undefined as ((server: string) => WorkloadApi) | undefined
  }
  const controller = new AgentController({
    queue: new WorkQueue(clock, { baseMs: 1000, maxMs: 8000 }),
    cellNodeSets,
    infra,
    workloadClient: (config) => {
      state.builds++
      if (state.workload instanceof Error) throw state.workload
      const api = state.workloadFor?.(config.server) ?? state.workload
      return { api: () => api, close: () => {} }
    },
    bounds: { timeoutMs: 60_000, workers: 4, namespaceWorkers: 2, maxPassBytes: 1 << 20, maxPendingPods: 1000, ...options.bounds },
    active: () => state.active,
    clock,
    resyncMs: options.resyncMs ?? 60_000,
    windows: { leaseMs: 90_000, heartbeatMs: 360_000, startupMs: 90_000 },
    metrics,
    log
  })
  const running = controller.run()
  const passes = (): string[] => lines.filter((l) => l.message === 'pass').map((l) => l.fields.cellNodeSet as string)
  return { clock, cellNodeSets, infra, metrics, lines, state, controller, running, passes }
}

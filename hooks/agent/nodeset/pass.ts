/**
 * One pass for one CellNodeSet: serve check, snapshot, decide, carry out, observe again, write
 * the status, then the finalizer (docs/workload.md, "What the agent does").
 *
 * The status is observed after the actions of the pass: when any Node was written, the workload
 * cluster is read again and the core decides once more, and that second status is the one
 * written (its own actions wait for the next pass). Nothing is written in the workload cluster
 * while it is unreachable: the core gives no Node action then.
 */
import { WORKLOAD_NODES_FINALIZER, type CellNode, type CellNodeSetStatus } from '../../api/cellnodeset.ts'
import { readCellNodeSet as readStored } from '../../api/cellnodeset-reader.ts'
import { isRecord } from '../../k8s/objects.ts'
import { applyNodeActions } from './actions.ts'
import { statusCode } from '../runtime/clients.ts'
import type { InfraApi, WorkloadApi } from '../model/apis.ts'
import { decide } from './decide/core.ts'
import type { CellNodeSetInput, Decision, LivenessWindows, PodList } from '../model/observed.ts'
import { checkPoolOwner, kubeconfigFromSecret, type Reduced, type ReducedKubeconfig } from '../workload/kubeconfig.ts'
import type { HeartbeatTracker } from './decide/liveness.ts'
import { errorText } from '../workload/reachability.ts'
import { readSnapshot, unreachable } from './snapshot.ts'
import type { PhysicalGpuIndex } from './physical-gpus.ts'

/** What a pass needs from the process. */
export interface PassDeps {
  infra: InfraApi
  /** The kubeconfig Secret, read by name (undefined when there is none). */
  secret(namespace: string, name: string): Promise<unknown>
  /** The workload client for a Secret at a resourceVersion, built from the reduced kubeconfig. */
  workload(secretKey: string, resourceVersion: string, config: ReducedKubeconfig): WorkloadApi
  /**
   * The unbound pending Pods of the pass's workload cluster (snapshot.ts, `listPendingPods`),
   * read with `api` unless another pass of the round has read them already.
   */
  pendingPods(api: WorkloadApi): Promise<PodList>
  /** The heartbeat memory of one CellNodeSet. */
  tracker(cnsKey: string): HeartbeatTracker
  windows?: LivenessWindows
  /** The Node keys the admin permits past the restricted-key rule. */
  permittedNodeKeys?: readonly string[]
  /** The infrastructure cluster's physical GPUs (physical-gpus.ts). */
  physicalGpus?: Pick<PhysicalGpuIndex, 'counts'>
  clock(): Date
}

/** What a pass did, for logs and metrics. */
export interface PassReport {
  served: boolean
  /** Why the CellNodeSet is not served, when it is not. */
  notServed?: string
  reachable?: string
  nodeWrites: { patch: number; delete: number }
  errors: { reason: string; message: string }[]
  /** What of the stored status could not be read and was left out (it is written anew). */
  statusProblems?: string[]
  statusWritten: boolean
  finalizer?: 'added' | 'removed'
  /**
   * What a served pass saw, for the pool's metrics and Events (not logged): the pool as read, the
   * spec's Nodes, and the CellNodeSet's status before the pass (as stored) and after it.
   */
  observed?: { pool: unknown; nodes: CellNode[]; before?: CellNodeSetStatus; after: CellNodeSetStatus }
}

/** Runs one pass. Never throws for anything an object or a cluster can do. */
export async function runPass(object: unknown, deps: PassDeps): Promise<PassReport> {
  const report: PassReport = { served: false, nodeWrites: { patch: 0, delete: 0 }, errors: [], statusWritten: false }
  const cns = readCellNodeSet(object)
  if (typeof cns === 'string') {
    report.notServed = cns
    return report
  }
  if (cns.statusProblems.length > 0) report.statusProblems = cns.statusProblems
  const { namespace, name } = cns.metadata as { namespace: string; name: string }
  const owner = await checkPoolOwner(object, namespace, (ns, pool) => deps.infra.getPool(ns, pool), report)
  if (owner === undefined) return report
  report.served = true

  const ref = { namespace, name: cns.spec.kubeconfigSecretRef.name, key: cns.spec.kubeconfigSecretRef.key }
  let secret: unknown
  let reduced: Reduced
  try {
    secret = await deps.secret(ref.namespace, ref.name)
    reduced = kubeconfigFromSecret(secret, ref)
  } catch (error) {
    if (statusCode(error) !== 403) {
      // The infrastructure cluster did not answer: nothing is known, so nothing is written.
      report.errors.push({ reason: 'SecretRead', message: `Secret ${ref.namespace}/${ref.name}: ${errorText(error)}` })
      return report
    }
    reduced = {
      ok: false,
      problem: { reason: 'CredentialInvalid', message: `the agent may not read Secret ${ref.namespace}/${ref.name}: ${errorText(error)}` }
    }
  }
  const key = `${namespace}/${name}`
  let api: WorkloadApi | undefined
  let snapshot
  if (!reduced.ok) {
    deps.tracker(key).retain(new Set())
    snapshot = unreachable({ reason: 'CredentialInvalid', message: reduced.problem.message })
  } else {
    const rv =
      isRecord(secret) && isRecord(secret.metadata) && typeof secret.metadata.resourceVersion === 'string'
        ? secret.metadata.resourceVersion
        : ''
    api = deps.workload(`${ref.namespace}/${ref.name}`, rv, reduced.config)
    const workload = api
    snapshot = await readSnapshot(
      workload,
      cns.spec,
      deps.tracker(key),
      () => deps.clock().getTime(),
      () => deps.pendingPods(workload)
    )
  }
  report.reachable = snapshot.reachability.reason
  const wanted = cns.spec.physicalGPUs
  const physicalGPUs = wanted === undefined ? undefined : deps.physicalGpus?.counts(wanted, namespace)
  const options = {
    ...(deps.windows === undefined ? {} : { windows: deps.windows }),
    permittedNodeKeys: deps.permittedNodeKeys ?? [],
    ...(physicalGPUs !== undefined ? { physicalGPUs } : {})
  }
  let decision: Decision = decide(cns, snapshot, deps.clock(), options)

  const nodeActions = decision.actions.filter((a) => a.type === 'patchNode' || a.type === 'deleteNode')
  if (api !== undefined && nodeActions.length > 0) {
    const outcome = await applyNodeActions(api, nodeActions, () => deps.clock())
    for (const action of outcome.done) {
      if (action.type === 'patchNode') report.nodeWrites.patch++
      else report.nodeWrites.delete++
    }
    for (const failure of outcome.failed) {
      report.errors.push({
        reason: failure.code === 409 ? 'NodeConflict' : 'NodeWrite',
        message: `${failure.action.type} ${actionNodeName(failure.action)}: ${failure.error}`
      })
    }
    const workload = api
    const after = await readSnapshot(
      workload,
      cns.spec,
      deps.tracker(key),
      () => deps.clock().getTime(),
      () => deps.pendingPods(workload)
    )
    const second = decide(cns, after, deps.clock(), { ...options, sweptThisPass: outcome.swept })
    // The second look's Node actions wait for the next pass; its finalizer decision sees the sweep done.
    decision = { ...second, actions: second.actions.filter((a) => a.type === 'addFinalizer' || a.type === 'removeFinalizer') }
    report.reachable = after.reachability.reason
  }

  report.observed = { pool: owner.pool, nodes: cns.spec.nodes ?? [], after: decision.status }
  if (cns.status !== undefined) report.observed.before = cns.status

  const resourceVersion =
    isRecord(object) && isRecord(object.metadata) && typeof object.metadata.resourceVersion === 'string'
      ? object.metadata.resourceVersion
      : ''
  if (decision.writeStatus) {
    try {
      await deps.infra.replaceStatus(namespace, name, resourceVersion, decision.status)
      report.statusWritten = true
    } catch (error) {
      report.errors.push({ reason: 'StatusWrite', message: errorText(error) })
    }
  }

  const finalizers = cns.metadata.finalizers ?? []
  for (const action of decision.actions) {
    try {
      if (action.type === 'addFinalizer') {
        await deps.infra.setFinalizers(namespace, name, finalizers, [...finalizers, WORKLOAD_NODES_FINALIZER])
        report.finalizer = 'added'
      } else if (action.type === 'removeFinalizer') {
        if (action.nodesLeft.length > 0) {
          await deps.infra
            .warn(
              { namespace, name, uid: uidOf(object) },
              'NodesLeftBehind',
              `Releasing the CellNodeSet (${action.why}); these Nodes of the pool are left in the workload cluster: ${action.nodesLeft.join(', ')}`,
              deps.clock()
            )
            .catch((error: unknown) => report.errors.push({ reason: 'EventWrite', message: errorText(error) }))
        }
        await deps.infra.setFinalizers(
          namespace,
          name,
          finalizers,
          finalizers.filter((f) => f !== WORKLOAD_NODES_FINALIZER)
        )
        report.finalizer = 'removed'
      }
    } catch (error) {
      report.errors.push({ reason: 'FinalizerWrite', message: errorText(error) })
    }
  }
  return report
}

function uidOf(object: unknown): string {
  return isRecord(object) && isRecord(object.metadata) && typeof object.metadata.uid === 'string' ? object.metadata.uid : ''
}

/**
 * The CellNodeSet as the core reads it (through the one reader of api/cellnodeset-reader.ts), or
 * why it cannot be served: no name or namespace, or a spec that fails its schema (every failing
 * field named). A status part that fails its schema is left out, and named in `statusProblems`.
 */
export function readCellNodeSet(object: unknown): (CellNodeSetInput & { statusProblems: string[] }) | string {
  const read = readStored(object)
  if (typeof read === 'string') return read
  const { name, namespace, generation, deletionTimestamp, finalizers } = read.metadata
  if (namespace === undefined || namespace === '') return 'metadata.name and metadata.namespace are required'
  if (read.spec === undefined) return read.specProblems.join('; ')
  const input: CellNodeSetInput & { statusProblems: string[] } = {
    metadata: { name, namespace },
    spec: read.spec,
    statusProblems: read.statusProblems
  }
  if (generation !== undefined) input.metadata.generation = generation
  if (deletionTimestamp !== undefined) input.metadata.deletionTimestamp = deletionTimestamp
  if (finalizers !== undefined) input.metadata.finalizers = finalizers
  if (read.hasStatus) input.status = read.status
  return input
}

/** The Node an action names, for an error message. */
function actionNodeName(action: object): string {
  const name: unknown = Object.hasOwn(action, 'name') ? (action as { name?: unknown }).name : undefined
  return typeof name === 'string' ? name : ''
}

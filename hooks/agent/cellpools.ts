/**
 * The agent's cell pool controllers, wired (docs/workload.md, "The agent process"): the CellNodeSet
 * controller with the DRA physical-GPU informers it summarizes, and the CellInfrastructure
 * controller of Cluster API cells. main.ts starts them only with `CELL_POOLS=true` (the default):
 * their informers list cells.kubeswift.io types, which a cluster without those CRDs does not serve.
 */
import type { KubeConfig } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { infraApi, objectsApi } from './runtime/clients.ts'
import type { Clock } from './runtime/clock.ts'
import type { AgentConfig } from './runtime/config.ts'
import { AgentController } from './nodeset/controller.ts'
import { InfrastructureController } from './infrastructure/controller.ts'
import { cellInfrastructureInformer, cellNodeSetInformer, draInformer, startInformer } from './runtime/informer.ts'
import type { AgentMetrics } from './runtime/metrics.ts'
import { PhysicalGpuIndex } from './nodeset/physical-gpus.ts'
import { WorkQueue, type Backoff } from './runtime/queue.ts'
import { workloadConnection } from './workload/client.ts'

/** What main.ts drives of the cell pool controllers. */
export interface CellPools {
  /** The informers readiness counts (the DRA ones do not: a cluster without resource.k8s.io/v1 has no DRA pool). */
  synced(): { cellNodeSetsSynced: boolean; cellInfrastructuresSynced: boolean }
  /** The passes in progress (their CellNodeSets). */
  passing(): string[]
  /** Elected: pass now. */
  wake(): void
  /** Lost the Lease. */
  standDown(): void
  /** The controllers' loops; resolves once both have stopped. */
  run(): Promise<unknown>
  /** The passes in progress finish; no new one starts. */
  stop(): Promise<unknown>
  /** The informers stop. */
  stopInformers(): Promise<unknown>
}

/** Starts the cell pool informers and builds their controllers (not yet running). */
export function startCellPools(
  kc: KubeConfig,
  deps: { config: AgentConfig; clock: Clock; metrics: AgentMetrics; log: Logger; leading: () => boolean; stopping: () => boolean }
): CellPools {
  const { config, clock, metrics, log, leading, stopping } = deps
  const cellNodeSets = cellNodeSetInformer(kc, config.watchNamespace)
  // DRA pools: the infrastructure cluster's physical GPUs, summarized per pool into its CellNodeSet.
  const resourceSlices = draInformer(kc, 'resourceslices')
  const resourceClaims = draInformer(kc, 'resourceclaims')
  let gpuInformersSynced = (): boolean => false
  const physicalGpus = new PhysicalGpuIndex({
    synced: () => gpuInformersSynced(),
    slices: () => resourceSlices.list(),
    claims: () => resourceClaims.list()
  })
  const backoff: Backoff = { baseMs: 1000, maxMs: config.resyncMs }
  let synced = (): boolean => false
  const controller = new AgentController({
    queue: new WorkQueue(clock, backoff),
    cellNodeSets,
    infra: infraApi(kc, config.callTimeoutMs),
    workloadClient: (reduced) =>
      workloadConnection(reduced, { callTimeoutMs: config.callTimeoutMs, maxAnswerBytes: config.passes.maxAnswerBytes }),
    bounds: config.passes,
    active: () => leading() && synced(),
    clock,
    resyncMs: config.resyncMs,
    windows: config.windows,
    permittedNodeKeys: config.permittedNodeKeys,
    physicalGpus,
    metrics,
    log
  })
  const gpuStates = (
    [
      ['resourceslices', resourceSlices],
      ['resourceclaims', resourceClaims]
    ] as const
  ).map(([what, informer]) => startInformer(log, what, informer, () => physicalGpus.changed(), stopping))
  gpuInformersSynced = () => gpuStates.every((state) => state.synced())
  const cellNodeSetState = startInformer(log, 'cellnodesets', cellNodeSets, (o) => controller.cellNodeSetChanged(o), stopping)
  // Cluster API cells: the KubeSwiftMachines and bootstrap configs their pools ask for.
  const cellInfrastructures = cellInfrastructureInformer(kc, config.watchNamespace)
  const infrastructure = new InfrastructureController({
    queue: new WorkQueue(clock, backoff),
    cellInfrastructures,
    objects: objectsApi(kc, config.callTimeoutMs),
    active: () => leading() && synced(),
    clock,
    resyncMs: config.resyncMs,
    metrics,
    log
  })
  const cellInfrastructureState = startInformer(log, 'cellinfrastructures', cellInfrastructures, (o) => infrastructure.changed(o), stopping)
  synced = () => cellNodeSetState.synced() && cellInfrastructureState.synced()
  return {
    synced: () => ({ cellNodeSetsSynced: cellNodeSetState.synced(), cellInfrastructuresSynced: cellInfrastructureState.synced() }),
    passing: () => controller.passing,
    wake() {
      controller.wake()
      infrastructure.wake()
    },
    standDown: () => controller.standDown(),
    run: () => Promise.all([controller.run(), infrastructure.run()]),
    stop: () => Promise.all([controller.stop(), infrastructure.stop()]),
    stopInformers: () => Promise.allSettled([cellNodeSets.stop(), cellInfrastructures.stop(), resourceSlices.stop(), resourceClaims.stop()])
  }
}

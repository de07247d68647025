/**
 * The world of a Cluster API scenario file: the test cluster as the management cluster, a second
 * API server as the workload cluster, Cluster API's core CRDs and the stand-in providers' CRDs
 * installed, the core manager running, the stand-in providers polling, and one Cluster for the
 * workload cluster, provisioned and initialized. Stopped when the file's tests end.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startCluster, type TestCluster } from './cluster.ts'
import {
  applyCrdsServerSide,
  clusterApiCoreCrds,
  clusterApiManagerBinary,
  createWorkloadClusterObject,
  startClusterApiManager,
  type ClusterApiManager
} from './clusterapi.ts'
import { KINDS, standInCrd, StandInProviders } from './clusterapi-providers.ts'
import { eventually } from './env.ts'
import { KubeClient, loadKubeconfig } from './kube.ts'
import { binariesDir, startWorkloadCluster, type WorkloadCluster } from './workload-cluster.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

/** A running Cluster API world. */
export interface ClusterApiWorld {
  cluster: TestCluster
  /** Admin client of the management (infrastructure) cluster. */
  kube: KubeClient
  workload: WorkloadCluster
  /** Admin client of the workload cluster. */
  wl: KubeClient
  manager: ClusterApiManager
  providers: StandInProviders
  /** The Cluster object as Cluster API reported it provisioned. */
  capiCluster: Loose
  /**
   * Polls until `check` answers (eventually(), 90 s by default); a timeout names what the
   * stand-ins last failed at and ends with the manager's last log lines.
   */
  until: <T>(what: string, check: () => Promise<T | undefined>, timeoutMs?: number) => Promise<T>
  /** Polls until the manager has logged a line holding every one of `parts`; answers that line. */
  managerLogged: (...parts: string[]) => Promise<string>
}

/** Options of {@link startClusterApiWorld}. */
export interface ClusterApiWorldOptions {
  /** The namespace of the Cluster and its Machines, the only one the manager watches. */
  namespace: string
  /** The Cluster's name. */
  clusterName: string
  /** More CRD files to install (the parent kind of a scenario's owner references, for example). */
  extraCrds?: readonly string[]
}

/** Starts the world and registers its teardown with the current tap test. */
export async function startClusterApiWorld(options: ClusterApiWorldOptions): Promise<ClusterApiWorld> {
  const binDir = binariesDir()
  const managerBinary = clusterApiManagerBinary()
  const cluster = await startCluster({ binDir })
  const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
  const stops: (() => Promise<void> | void)[] = [() => cluster.stop(), () => kube.close()]
  // Everything started is stopped in reverse order, also when a later step of the start fails.
  t.teardown(async () => {
    for (const stop of stops.reverse()) await stop()
  })
  const workload = await startWorkloadCluster(cluster, binDir)
  stops.push(
    () => workload.stop(),
    () => workload.close()
  )
  const standIns = join(cluster.dir, 'cluster-api-stand-ins.json')
  writeFileSync(standIns, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Object.values(KINDS).map(standInCrd) }))
  await applyCrdsServerSide(cluster, kube, [...clusterApiCoreCrds(), standIns, ...(options.extraCrds ?? [])])
  await kube.create(
    { apiVersion: 'v1', resource: 'namespaces' },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: options.namespace } }
  )
  const manager = await startClusterApiManager(cluster, managerBinary, options.namespace)
  stops.push(() => manager.stop())
  const providers = new StandInProviders(kube, workload.admin, options.namespace)
  providers.start()
  stops.push(() => providers.stop())

  const diagnosis = (): string =>
    `stand-in problems: ${JSON.stringify([...providers.problems])}\nCluster API manager log:\n${manager.logText().split('\n').slice(-40).join('\n')}`
  const diagnosed = (error: unknown): Error => new Error(`${(error as Error).message}\n${diagnosis()}`)
  const until = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> =>
    eventually(what, check, timeoutMs, diagnosis)
  let capiCluster: Loose
  try {
    capiCluster = await createWorkloadClusterObject(kube, cluster, workload, options.namespace, options.clusterName)
  } catch (error) {
    throw diagnosed(error)
  }
  return {
    cluster,
    kube,
    workload,
    wl: workload.admin,
    manager,
    providers,
    capiCluster,
    until,
    managerLogged: (...parts) =>
      until(`the manager to log a line with ${JSON.stringify(parts)}`, async () =>
        manager
          .logText()
          .split('\n')
          .find((line) => parts.every((part) => line.includes(part)))
      )
  }
}

/**
 * One lane's round (lanes.ts): what the passes a lane runs one after another share, so that a
 * workload cluster is asked once per round, not once per pool: the kubeconfig Secret, read by
 * name, and the cluster's unbound pending Pods.
 */
import type { InfraApi } from '../model/apis.ts'
import type { PodList } from '../model/observed.ts'
import { isRecord, ownValue } from '../../k8s/objects.ts'

/**
 * What the passes of one lane's round share: the Secret, read once, and the unbound pending Pods
 * of each workload cluster (a Secret at a resourceVersion), listed once; a list that failed is
 * not kept, so the next pass tries again. Dropped when the lane's round ends.
 */
export interface Round {
  secret(namespace: string, name: string): Promise<unknown>
  pendingPods(cluster: string, list: () => Promise<PodList>): Promise<PodList>
}

/** A new round, whose Secret reads go to `infra`. */
export function newRound(infra: InfraApi): Round {
  const secrets = new Map<string, Promise<unknown>>()
  const pending = new Map<string, Promise<PodList>>()
  return {
    secret(namespace, name) {
      const key = `${namespace}/${name}`
      let read = secrets.get(key)
      if (read === undefined) secrets.set(key, (read = infra.getSecret(namespace, name)))
      return read
    },
    pendingPods(cluster, list) {
      let read = pending.get(cluster)
      if (read === undefined) {
        pending.set(
          cluster,
          (read = list().then((pods) => {
            if (!pods.read) pending.delete(cluster)
            return pods
          }))
        )
      }
      return read
    }
  }
}

/** `namespace/name` of the kubeconfig Secret a CellNodeSet names, if it names one. */
export function secretRefOf(cns: unknown): string | undefined {
  const metadata = isRecord(cns) ? cns.metadata : undefined
  const name = ownValue(ownValue(isRecord(cns) ? cns.spec : undefined, 'kubeconfigSecretRef'), 'name')
  const namespace = ownValue(metadata, 'namespace')
  return typeof name === 'string' && name !== '' && typeof namespace === 'string' ? `${namespace}/${name}` : undefined
}

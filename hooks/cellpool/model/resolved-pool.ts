/**
 * A pool spec with every default applied and durations in seconds (request/resolve.ts
 * `resolvePool`): the one view of a pool's spec the builders, phases and scaling read, so no
 * other step reads a default.
 */
import type { Taint } from '../../api/cellnodeset.ts'

/** The DRA claim of a cell: a per-cell claim from a template, or one shared claim. */
export interface ResolvedDra {
  claim: { kind: 'resourceClaimTemplateName' | 'resourceClaimName'; name: string }
  requestName: string
  tier: 'pcie'
  /** `''`: no hugepage backing. */
  hugepages: '' | '1Gi' | '2Mi'
}

/** A pool spec with every default applied and durations in seconds. */
export interface ResolvedPool {
  replicas: number
  /** The guestTemplate as written (a deep copy). */
  guestTemplate: Record<string, unknown>
  gpu: { count: number; backend: 'DRA' | 'Native'; dra?: ResolvedDra; native?: { profile: string } }
  /** `''`: the primary interface. */
  nodeIPFrom: string
  hostname: 'CellName' | 'None'
  joinSecretName: string
  joinSecretKey: string
  bootstrapReadyTimeoutSeconds: number
  workload: {
    kubeconfigSecretName: string
    key: string
    labels: Record<string, string>
    annotations: Record<string, string>
    /** In spec order; `value` omitted when empty, `timeAdded` dropped. */
    taints: Taint[]
  }
  autoscaling: {
    enabled: boolean
    /** The floor: `minReplicas`, else `spec.replicas`. */
    minReplicas: number
    /** The ceiling: `maxReplicas`, never below the floor. */
    maxReplicas: number
    stabilizationWindowSeconds: number
    scaleDown: 'Manual' | 'Auto'
    scaleDownStabilizationWindowSeconds: number
  }
  capacity: {
    readyTimeoutSeconds: number
    expectedDevicesPerCell: number
    resourceName: string
    /** HAMi's mode in the workload cluster: its device plugin's annotations, or its DRA driver's ResourceSlices. */
    mode: 'DevicePlugin' | 'DRA'
    /** DRA mode: HAMi's DeviceClass; `''` otherwise. */
    deviceClassName: string
  }
  deletion: { policy: 'Drain' | 'Force'; drainTimeoutSeconds: number }
  updatePolicy: 'Manual' | 'RollingUpdate'
  /** Provisioner ClusterAPI: the cells are Machines of this Cluster. Absent: SwiftGuests. */
  clusterApi?: ResolvedClusterApi
}

/** The Cluster API settings of a pool, resolved. */
export interface ResolvedClusterApi {
  clusterName: string
  /** `''`: none (the Machine carries no version). */
  version: string
  /** Absent: the pool renders each Machine's data Secret from its join template. */
  bootstrapTemplate?: { apiGroup: string; kind: string; name: string }
}

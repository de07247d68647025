/**
 * Which provisioner makes a pool's cells (model/provisioner.ts): the one place that asks what a
 * spec names; every other step holds a {@link CellProvisioner} and never asks which one it is.
 */
import type { CellProvisioner } from '../model/provisioner.ts'
import { usesClusterApi } from '../request/resolve.ts'
import { CLUSTER_API } from './clusterapi.ts'
import { SWIFT_GUEST } from './swift-guest.ts'

/** The provisioner a pool's spec names: ClusterAPI, else SwiftGuest (the default). */
export function provisionerOf(spec: unknown): CellProvisioner {
  return usesClusterApi(spec) ? CLUSTER_API : SWIFT_GUEST
}

/** The provisioner that is not `provisioner`. */
export function otherProvisioner(provisioner: CellProvisioner): CellProvisioner {
  return provisioner === CLUSTER_API ? SWIFT_GUEST : CLUSTER_API
}

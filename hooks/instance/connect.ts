/**
 * `status.connect` (docs/instance.md, "Status"): how users reach a running Instance.
 *
 * Choices where the spec is silent:
 * - The address is the Setting `instance-access-address`, else the Pod's host IP, and that only
 *   when it is an IP address: the SSH command is pasted into a shell, so nothing unchecked goes in.
 * - An unusable Setting gives only a message, never the host IP in its place (behind a NAT the
 *   host IP is the wrong address).
 * - `ssh` needs the spec's key, the Pod's `sshd` container and the Service's `ssh` node port: a
 *   Pod built before the key was added runs no sidecar. The user is `root`, the login the sidecar
 *   image documents (deploy/sshd/README.md); sessions then run as `main`'s user.
 * - `ports[]` are the Service's ports other than the SSH one, in its order, with the name status
 *   gives them; a port without an allocated node port is left out.
 */
import { SSH_PORT_NAME, type InstanceStatus } from '../api/instance.ts'
import { isAccessIP, type AccessAddress } from '../api/setting.ts'
import { withoutStop } from '../k8s/sentences.ts'
import { asList, asRecord, isRecord, type KubeObject } from '../k8s/objects.ts'
import { SSHD_CONTAINER } from './labels.ts'
import { portIdentity } from './ports.ts'
import { observedServicePorts } from './service.ts'

/** `<host>:<port>`, an IPv6 host in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** True when the observed Pod has the SSH sidecar. */
function hasSshSidecar(pod: KubeObject | undefined): boolean {
  return asList(asRecord(pod?.spec).containers).some((c) => asRecord(c).name === SSHD_CONTAINER)
}

/**
 * `status.connect` of a running Instance: the address (the Setting, else the Pod's host IP when it
 * is an IP), the SSH command when SSH is configured and runs, and an endpoint per spec port with a
 * node port. A Setting that cannot be used gives only a message: an address the admin did not mean
 * (the host IP behind their NAT) is not offered in its place. Undefined when there is no address.
 */
export function connectStatus(input: {
  spec: unknown
  pod: KubeObject | undefined
  hostIP: string | undefined
  service: KubeObject | undefined
  ports: NonNullable<InstanceStatus['ports']>
  accessAddress: AccessAddress | undefined
}): InstanceStatus['connect'] {
  const setting = input.accessAddress ?? {}
  if (setting.problem !== undefined) {
    return { message: `${withoutStop(setting.problem)}; an admin must fix the Setting, so no address is given.` }
  }
  const address = setting.address ?? (input.hostIP !== undefined && isAccessIP(input.hostIP) ? input.hostIP : undefined)
  if (address === undefined) return undefined
  const connect: NonNullable<InstanceStatus['connect']> = { address }
  // The Service's own port name tells the SSH port (a spec cannot name a port `ssh`).
  const ssh = observedServicePorts(input.service).find((p) => p.name === SSH_PORT_NAME)
  const sshIdentity = ssh === undefined ? undefined : portIdentity(ssh.port, ssh.protocol)
  if (ssh?.nodePort !== undefined && isRecord(asRecord(input.spec).sshPublicKey) && hasSshSidecar(input.pod)) {
    // ssh takes the host bare (it reads `[...]` as part of the name); the port goes in -p.
    connect.ssh = `ssh -p ${ssh.nodePort} root@${address}`
  }
  const ports = input.ports.flatMap((p) =>
    portIdentity(p.port, p.protocol) === sshIdentity || p.nodePort === undefined
      ? []
      : [{ name: p.name, port: p.port, protocol: p.protocol, endpoint: hostPort(address, p.nodePort) }]
  )
  if (ports.length > 0) connect.ports = ports
  return connect
}

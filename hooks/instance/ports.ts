/**
 * Port identity of an Instance: a port is identified by (port, protocol), with the protocol
 * defaulted to TCP as the API server does. The spec check (duplicates, ports sharing a number),
 * the Service (which identity keeps which node port) and the status (which name the spec gives an
 * identity) all key ports the same way, through this module.
 */
import type { PortProtocol } from '../api/instance.ts'
import { SSH_PORT } from './labels.ts'

/** The protocol of a port entry that names none. */
export const DEFAULT_PORT_PROTOCOL = 'TCP'

/** A port with its protocol filled in. */
export interface ResolvedPort {
  port: number
  protocol: PortProtocol
  name?: string
}

/** The identity key of a port: `8888/TCP`. */
export function portIdentity(port: number, protocol: string): string {
  return `${port}/${protocol}`
}

/** The protocol of a stored port entry: its string `protocol` when set, else TCP. */
export function protocolOf(entry: Record<string, unknown>): string {
  return typeof entry.protocol === 'string' && entry.protocol !== '' ? entry.protocol : DEFAULT_PORT_PROTOCOL
}

/** True for the port entry sshd serves (22/TCP); with SSH on it is declared on `sshd`, never on `main`. */
export function isSshPort(port: { port: number; protocol: string }): boolean {
  return port.port === SSH_PORT && port.protocol === DEFAULT_PORT_PROTOCOL
}

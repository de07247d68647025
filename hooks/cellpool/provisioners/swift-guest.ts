/**
 * The SwiftGuest provisioner (docs/cellpool.md, "Cells and their children"): per cell a
 * SwiftSeedProfile `<cell>-seed` that hands the guest its cloud-init from the bootstrap Secret,
 * and a SwiftGuest `<cell>`, the VM with the pool's GPU.
 *
 * Choices where the spec is silent:
 * - No spread constraint is added to the guest: KubeSwift's GPU launcher ignores them.
 */
import {
  SEED_API_VERSION,
  SEED_PROFILE_TYPE_KEY,
  SWIFT_API_VERSION,
  SWIFT_GUEST_TYPE_KEY,
  TEMPLATE_HASH_ANNOTATION
} from '../../api/gpucellpool.ts'
import { canonicalJson, contentHash } from '../../k8s/hash.ts'
import { MAX_NAME_CHARS, MAX_REASON_CHARS, clipText, nameWithin } from '../../k8s/clip.ts'
import { kindOf } from '../../k8s/schema-messages.ts'
import { asRecord, asText, isRecord, ownValue, setOwn, sortedRecord, type KubeObject } from '../../k8s/objects.ts'
import { bootstrapSecretName, seedProfileName } from '../request/cell-names.ts'
import { cellName } from '../../api/cellnodeset.ts'
import { childLabels, gpuClaim } from '../build/children.ts'
import type { CellProvisioner, GuestCondition, GuestView, CellIdentity } from '../model/provisioner.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'

/**
 * The cell's SwiftSeedProfile `<cell>-seed`: NoCloud, user data from the bootstrap Secret and,
 * with hostname `CellName`, meta data naming the guest after the cell (so its Node is too).
 */
export function buildSeedProfile(id: CellIdentity, hostname: ResolvedPool['hostname']): KubeObject {
  const cell = cellName(id.poolName, id.index)
  const spec: Record<string, unknown> = {
    datasource: 'NoCloud',
    userData: '',
    userDataFrom: { secretKeyRef: { key: 'user-data', name: bootstrapSecretName(cell) } }
  }
  if (hostname === 'CellName') spec.metaData = `instance-id: ${cell}\nlocal-hostname: ${cell}\n`
  return {
    apiVersion: SEED_API_VERSION,
    kind: 'SwiftSeedProfile',
    metadata: { name: seedProfileName(cell), namespace: id.namespace, labels: childLabels(id) },
    spec: sortedRecord(spec)
  }
}

/**
 * The cell's SwiftGuest `<cell>`: the guestTemplate verbatim, overlaid with the fields the
 * controller owns (seed profile, run policy Always, migration off, the GPU), and annotated with
 * the template hash.
 */
export function buildGuest(pool: ResolvedPool, id: CellIdentity): KubeObject {
  const cell = cellName(id.poolName, id.index)
  const spec: Record<string, unknown> = JSON.parse(canonicalJson(pool.guestTemplate)) as Record<string, unknown>
  const overlay: Record<string, unknown> = {
    seedProfileRef: { name: seedProfileName(cell) },
    runPolicy: 'Always',
    migration: { enabled: false }
  }
  if (pool.gpu.backend === 'Native' && pool.gpu.native !== undefined) {
    overlay.gpuProfileRef = { name: pool.gpu.native.profile }
  } else if (pool.gpu.dra !== undefined) {
    overlay.gpuResourceClaim = gpuClaim(pool.gpu.dra)
  }
  for (const [key, value] of Object.entries(overlay)) setOwn(spec, key, value)
  return {
    apiVersion: SWIFT_API_VERSION,
    kind: 'SwiftGuest',
    metadata: {
      name: cell,
      namespace: id.namespace,
      labels: childLabels(id),
      annotations: { [TEMPLATE_HASH_ANNOTATION]: templateHash(pool) }
    },
    spec: sortedRecord(spec)
  }
}

/**
 * The first 10 hex digits of the SHA-256 of what a cell is built from, as canonical JSON:
 * guestTemplate, the resolved gpu, nodeIPFrom and hostname. Defaults are applied first, so
 * writing a default out does not make cells outdated.
 */
export function templateHash(pool: ResolvedPool): string {
  return contentHash({ guestTemplate: pool.guestTemplate, gpu: pool.gpu, nodeIPFrom: pool.nodeIPFrom, hostname: pool.hostname })
}

/** A cell's VM holds one GPU: a longer device list is not a VM this pool made, and is shown only in part. */
const MAX_GUEST_DEVICES = 16
/** The longest IP address (IPv6 with a zone is under 64 characters). */
const MAX_ADDRESS_CHARS = 64

/** The infrastructure node named by the guest, when it is a name at all. */
function hostNode(name: string | undefined, where: string, problems: string[]): string | undefined {
  if (name === undefined || nameWithin(name) !== undefined) return name
  problems.push(`${where}: status.gpu.nodeName is ${name.length} characters, past the ${MAX_NAME_CHARS} of a node name; not shown`)
  return undefined
}

/**
 * The SwiftGuest's status read defensively; problems are pushed to `problems`. Whatever is
 * copied into the pool's status is bounded (k8s/clip.ts): condition text is clipped, a node name
 * or address past its length is not copied, and at most 16 devices are.
 */
export function readGuest(guest: KubeObject, problems: string[]): GuestView {
  const where = `SwiftGuest ${guest.metadata.name ?? ''}`
  const status = guest.status
  if (status !== undefined && !isRecord(status)) problems.push(`${where}: status is ${kindOf(status)}, not an object`)
  const s = asRecord(status)
  const gpu = asRecord(s.gpu)
  const network = asRecord(s.network)
  const devices: string[] = []
  if (gpu.devices !== undefined && !Array.isArray(gpu.devices))
    problems.push(`${where}: status.gpu.devices is ${kindOf(gpu.devices)}, not a list`)
  for (const d of Array.isArray(gpu.devices) ? gpu.devices : []) {
    const id =
      typeof d === 'string'
        ? d
        : (asText(asRecord(d).pciAddress) ?? asText(asRecord(d).address) ?? asText(asRecord(d).id) ?? asText(asRecord(d).name))
    if (id === undefined || id === '') problems.push(`${where}: an entry of status.gpu.devices is ${kindOf(d)} without an address`)
    else if (nameWithin(id) === undefined) problems.push(`${where}: an address of status.gpu.devices is past ${MAX_NAME_CHARS} characters`)
    else if (devices.length === MAX_GUEST_DEVICES) {
      problems.push(`${where}: status.gpu.devices lists more than ${MAX_GUEST_DEVICES} devices; the first ${MAX_GUEST_DEVICES} are shown`)
      break
    } else devices.push(id)
  }
  const interfaces: Array<{ name: string; ip?: string }> = []
  if (network.interfaces !== undefined && !Array.isArray(network.interfaces))
    problems.push(`${where}: status.network.interfaces is ${kindOf(network.interfaces)}, not a list`)
  for (const i of Array.isArray(network.interfaces) ? network.interfaces : []) {
    const name = nameWithin(asText(asRecord(i).name), MAX_NAME_CHARS)
    if (name === undefined) continue
    const ip = nameWithin(asText(asRecord(i).ip), MAX_ADDRESS_CHARS)
    interfaces.push(ip !== undefined ? { name, ip } : { name })
  }
  const conditions: GuestCondition[] = []
  if (s.conditions !== undefined && !Array.isArray(s.conditions))
    problems.push(`${where}: status.conditions is ${kindOf(s.conditions)}, not a list`)
  for (const c of Array.isArray(s.conditions) ? s.conditions : []) {
    const r = asRecord(c)
    const type = asText(r.type)
    if (type === undefined) continue
    const condition: GuestCondition = {
      type: clipText(type, MAX_REASON_CHARS),
      status: clipText(asText(r.status) ?? 'Unknown', MAX_REASON_CHARS)
    }
    const reason = asText(r.reason)
    const message = asText(r.message)
    if (reason !== undefined) condition.reason = clipText(reason, MAX_REASON_CHARS)
    if (message !== undefined) condition.message = clipText(message)
    conditions.push(condition)
  }
  const hash = ownValue(guest.metadata.annotations, TEMPLATE_HASH_ANNOTATION)
  return {
    name: guest.metadata.name ?? '',
    uid: asText(guest.metadata.uid) ?? '',
    phase: asText(s.phase),
    devices,
    hostNode: hostNode(asText(gpu.nodeName) ?? asText(s.nodeName), where, problems),
    interfaces,
    primaryIP: nameWithin(asText(network.primaryIP), MAX_ADDRESS_CHARS),
    conditions,
    deleting: asText(guest.metadata.deletionTimestamp) !== undefined,
    templateHash: typeof hash === 'string' ? hash : undefined
  }
}

/** The SwiftGuest provisioner. */
export const SWIFT_GUEST: CellProvisioner = {
  name: 'SwiftGuest',
  seed: { type: SEED_PROFILE_TYPE_KEY, kind: 'SwiftSeedProfile', name: seedProfileName },
  guest: { type: SWIFT_GUEST_TYPE_KEY, kind: 'SwiftGuest', name: (cell) => cell },
  readGuest,
  buildSeed: (pool, id) => buildSeedProfile(id, pool.hostname),
  needsSecret: () => true,
  drainsDeletedGuest: false,
  buildGuest,
  templateHash,
  nodeEntry: (entry) => entry,
  poolChild: () => undefined
}

/**
 * Spec checks of a GPUCellPool (docs/cellpool.md, "Admission"): every rule, all problems at once. The
 * rules of `spec.cell` are in cell-rules.ts, those of the Node metadata in node-rules.ts; the
 * defaulted view of a valid spec is request/resolve.ts.
 *
 * The admission webhook and the sync hook run the same checks: an object can reach the sync hook
 * without admission (webhook off, stored by an older release), and the guestTemplate denylist is
 * a security control, since a cell's launcher pod is privileged. The spec is read as any JSON:
 * every field is checked for its type before it is used, and nothing here throws.
 *
 * Choices where the spec is silent:
 * - Sizes are bounded (model/limits.ts); the CellNodeSet estimate is made only for a spec with no other
 *   problem, since it reads the resolved spec.
 */
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { GPUCellPoolSpecSchema, POOL_NAME_MAX } from '../../api/gpucellpool.ts'
import { asRecord, isRecord } from '../../k8s/objects.ts'
import { schemaProblems as schemaErrorProblems, type SchemaWording } from '../../k8s/schema-problems.ts'
import { CELL_FIELDS, gpuProblems, guestTemplateProblems, nodeIPFromProblems } from './cell-rules.ts'
import { clusterApiProblems, usesBootstrapTemplate } from './clusterapi-rules.ts'
import { parseDuration } from '../../api/duration.ts'
import { isDnsSubdomain, isSecretKey, isSecretName, matchesDnsLabel } from '../../k8s/names.ts'
import { annotationProblems, labelProblems, taintProblems } from './node-rules.ts'
import { describe } from '../../k8s/schema-messages.ts'
import { clip } from './wording.ts'
import { resolvePool } from '../request/resolve.ts'
import type { PoolProblem } from '../model/problems.ts'
import { desiredNodeSetProblems, guestTemplateSizeProblems, nodeMetadataProblems } from '../build/sizes.ts'

/**
 * Problems of the pool name: cells are named `<pool>-<index>`, and a cell name is a VM hostname
 * and a Node name, so the pool name must be a DNS label that leaves room for `-` and five digits
 * within 63 characters.
 */
export function poolNameProblems(name: string): PoolProblem[] {
  if (name.length <= POOL_NAME_MAX && matchesDnsLabel(name)) return []
  return [
    {
      field: 'metadata.name',
      message:
        `metadata.name ${clip(name)} must be a DNS label (lower-case letters, digits and -, starting and ending with a letter or digit) ` +
        `of at most ${POOL_NAME_MAX} characters, so that cell names <pool>-<index> stay 63-character Node names`
    }
  ]
}

/**
 * Every admission rule of docs/cellpool.md against `spec` (any JSON) and the pool `name`, all
 * problems at once; `permittedNodeKeys` are the admin's exceptions to the restricted Node keys.
 */
export function poolProblems(name: string, spec: unknown, permittedNodeKeys: readonly string[] = []): PoolProblem[] {
  const named = poolNameProblems(name)
  if (!isRecord(spec)) return [...named, { field: 'spec', message: `spec must be an object, not ${describe(spec)}` }]
  const problems = [...named, ...merge(schemaProblems(spec), ruleProblems(spec, permittedNodeKeys))]
  // The CellNodeSet estimate reads the resolved spec, which is meaningful only for a valid one.
  return problems.length > 0 ? problems : desiredNodeSetProblems(name, resolvePool(spec))
}

/**
 * Schema and rule problems together, each said once: a rule's own sentence replaces the schema's
 * at the same field (`tier`, `count`, a duration), and a rule about a field inside one the schema
 * already reports missing or mistyped is left out.
 */
function merge(schema: PoolProblem[], rules: PoolProblem[]): PoolProblem[] {
  const ruleFields = new Set(rules.map((p) => p.field))
  const inside = (field: string, parent: string): boolean => field.startsWith(`${parent}.`) || field.startsWith(`${parent}[`)
  return dedupe([...schema.filter((p) => !ruleFields.has(p.field)), ...rules.filter((p) => !schema.some((s) => inside(p.field, s.field)))])
}

/** The rules the schema cannot state (or states without saying why). */
function ruleProblems(spec: Record<string, unknown>, permittedNodeKeys: readonly string[]): PoolProblem[] {
  const problems: PoolProblem[] = []
  const cell = asRecord(spec.cell)
  const gpu = asRecord(cell.gpu)
  problems.push(...guestTemplateProblems(cell.guestTemplate))
  if (isRecord(cell.gpu)) problems.push(...gpuProblems(spec, gpu))
  problems.push(...clusterApiProblems(spec, CELL_FIELDS))
  const hami = asRecord(asRecord(spec.capacity).hami)
  if (hami.mode === 'DRA' && !(typeof hami.deviceClassName === 'string' && isDnsSubdomain(hami.deviceClassName))) {
    problems.push({
      field: 'spec.capacity.hami.deviceClassName',
      message:
        "spec.capacity.hami.deviceClassName is required with mode DRA and must be a DNS subdomain: it names the DeviceClass of HAMi's DRA driver in the workload cluster"
    })
  }
  problems.push(...nodeIPFromProblems(cell.nodeIPFrom, cell.guestTemplate))
  const bootstrap = asRecord(spec.bootstrap)
  const workload = asRecord(spec.workloadCluster)
  const secrets = [
    {
      ref: 'spec.bootstrap.joinSecretRef.name',
      name: asRecord(bootstrap.joinSecretRef).name,
      why: 'a cell without a join template never joins',
      keyField: 'spec.bootstrap.joinSecretKey',
      key: bootstrap.joinSecretKey
    },
    {
      ref: 'spec.workloadCluster.kubeconfigSecretRef.name',
      name: asRecord(workload.kubeconfigSecretRef).name,
      why: 'the workload agent reads the workload cluster through it',
      keyField: 'spec.workloadCluster.key',
      key: workload.key
    }
  ]
  // A Cluster API pool with a bootstrap config template has no join template (clusterapi-rules.ts).
  for (const secret of usesBootstrapTemplate(spec) ? secrets.slice(1) : secrets)
    problems.push(...secretRefProblems(secret.ref, secret.name, secret.why), ...secretKeyProblems(secret.keyField, secret.key))
  const node = asRecord(workload.node)
  problems.push(
    ...labelProblems(node.labels, permittedNodeKeys),
    ...annotationProblems(node.annotations),
    ...taintProblems(node.taints, permittedNodeKeys)
  )
  problems.push(...nodeMetadataProblems(node.labels, node.annotations), ...guestTemplateSizeProblems(cell.guestTemplate))
  problems.push(...autoscalingProblems(asRecord(spec.autoscaling)))
  problems.push(
    ...durationProblems('spec.bootstrap.readyTimeout', bootstrap.readyTimeout, true),
    ...durationProblems('spec.capacity.readyTimeout', asRecord(spec.capacity).readyTimeout, true),
    ...durationProblems('spec.deletion.drainTimeout', asRecord(spec.deletion).drainTimeout, false)
  )
  return problems
}

/** How the pool's schema problems name fields and values, so they meet its rules' at the same field. */
const WORDING: SchemaWording = {
  root: 'spec',
  segment: (part) => (/^[A-Za-z0-9]+$/.test(part) ? `.${part}` : `[${clip(part)}]`),
  quote: describe,
  own: (error: ValueError, field: string, value: string) => {
    if (error.type === ValueErrorType.Kind) return `${field} ${value} must be an object`
    const type = (error.schema as { type?: unknown }).type
    if (typeof type !== 'string') return undefined
    return `${field} ${value} must be ${type === 'integer' || type === 'object' || type === 'array' ? 'an' : 'a'} ${type}`
  }
}

/** Types, enums, ranges and required fields, from the TypeBox schema the CRD is rendered from. */
function schemaProblems(spec: Record<string, unknown>): PoolProblem[] {
  return schemaErrorProblems(GPUCellPoolSpecSchema, spec, WORDING)
}

function autoscalingProblems(autoscaling: Record<string, unknown>): PoolProblem[] {
  const base = 'spec.autoscaling'
  const problems: PoolProblem[] = []
  const { minReplicas: min, maxReplicas: max } = autoscaling
  if (autoscaling.enabled === true && max === undefined) {
    problems.push({
      field: `${base}.maxReplicas`,
      message: `${base}.maxReplicas is required when autoscaling is enabled: an unbounded pool can take every GPU of the cluster`
    })
  }
  if (typeof min === 'number' && typeof max === 'number' && min > max) {
    problems.push({ field: `${base}.minReplicas`, message: `${base}.minReplicas ${min} exceeds maxReplicas ${max}` })
  }
  if (autoscaling.scaleDown === 'Auto' && min === undefined) {
    problems.push({
      field: `${base}.minReplicas`,
      message: `${base}.minReplicas is required with scaleDown Auto: it is the floor the pool shrinks to`
    })
  }
  problems.push(
    ...durationProblems(`${base}.stabilizationWindow`, autoscaling.stabilizationWindow, false),
    ...durationProblems(`${base}.scaleDownStabilizationWindow`, autoscaling.scaleDownStabilizationWindow, false)
  )
  return problems
}

function durationProblems(field: string, value: unknown, positive: boolean): PoolProblem[] {
  if (typeof value !== 'string') return [] // absent takes the default; another type is a schema problem
  const seconds = parseDuration(value)
  if (seconds === undefined) return [{ field, message: `${field} ${clip(value)} is not a duration (such as 90s, 15m or 1h30m)` }]
  if (positive && seconds <= 0) return [{ field, message: `${field} ${clip(value)} must be longer than 0` }]
  return []
}

/** A required Secret name: `why` says what the Secret is for. */
function secretRefProblems(field: string, name: unknown, why: string): PoolProblem[] {
  if (typeof name !== 'string' || name === '') return [{ field, message: `${field} is required: ${why}` }]
  if (!isSecretName(name)) return [{ field, message: `${field} ${clip(name)} is not a Secret name (a DNS subdomain)` }]
  return []
}

function secretKeyProblems(field: string, value: unknown): PoolProblem[] {
  if (typeof value !== 'string') return []
  if (isSecretKey(value)) return []
  return [{ field, message: `${field} ${clip(value)} is not a Secret key (letters, digits, -, _ and ., at most 253)` }]
}

function dedupe(problems: PoolProblem[]): PoolProblem[] {
  const seen = new Set<string>()
  return problems.filter((p) => {
    const key = `${p.field}\u0000${p.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

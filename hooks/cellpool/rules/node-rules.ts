/**
 * The admission rules of the Node metadata a pool asks for (`spec.workloadCluster.node`): label,
 * annotation and taint keys and values.
 *
 * Choices where the spec is silent:
 * - `cells.kubeswift.io/` keys are refused in node annotations as well as labels (the workload
 *   agent keeps its own record under that prefix).
 * - Two taints with the same key and effect are refused, as the API server refuses them on a Node.
 * - Node labels and taints are refused where the workload agent would set, with its own rights,
 *   what NodeRestriction keeps from a kubelet (hooks/k8s/node-keys.ts). docs/cellpool.md allows any
 *   valid label after join; this is narrower on purpose. An admin permits keys past that rule
 *   with `PERMITTED_NODE_KEYS` (the service's context), which the agent reads too.
 */
import { isRecord } from '../../k8s/objects.ts'
import { restrictedLabelReason, restrictedTaintReason } from '../../k8s/node-keys.ts'
import { isLabelValue, isQualifiedName } from '../../k8s/names.ts'
import { clip } from './wording.ts'
import type { PoolProblem } from '../model/problems.ts'

/** How an admin lifts a refusal, said after it. */
const PERMIT = ' (a cluster admin may permit the key: chart value controllers.cellpool.permittedNodeKeys)'

/** The label and annotation prefix the controller keeps for itself. */
const CONTROLLER_PREFIX = 'cells.kubeswift.io/'

export function labelProblems(labels: unknown, permittedNodeKeys: readonly string[] = []): PoolProblem[] {
  if (!isRecord(labels)) return []
  const problems: PoolProblem[] = []
  for (const [key, value] of Object.entries(labels)) {
    const field = `spec.workloadCluster.node.labels[${clip(key)}]`
    const keyed = keyProblems(field, key, 'label')
    problems.push(...keyed)
    const restricted = keyed.length === 0 ? restrictedLabelReason(key, permittedNodeKeys) : undefined
    if (restricted !== undefined) problems.push({ field, message: `${field}: ${clip(key)} is refused: ${restricted}${PERMIT}` })
    if (typeof value === 'string' && !isLabelValue(value)) {
      problems.push({
        field,
        message: `${field} value ${clip(value)} is not a label value (at most 63 letters, digits, -, _ and ., starting and ending with a letter or digit)`
      })
    }
  }
  return problems
}

export function annotationProblems(annotations: unknown): PoolProblem[] {
  if (!isRecord(annotations)) return []
  return Object.keys(annotations).flatMap((key) => keyProblems(`spec.workloadCluster.node.annotations[${clip(key)}]`, key, 'annotation'))
}

export function taintProblems(taints: unknown, permittedNodeKeys: readonly string[] = []): PoolProblem[] {
  if (!Array.isArray(taints)) return []
  const problems: PoolProblem[] = []
  const seen = new Set<string>()
  taints.forEach((taint, i) => {
    if (!isRecord(taint)) return // the schema check reports it
    const field = `spec.workloadCluster.node.taints[${i}]`
    if (typeof taint.key === 'string' && taint.key !== '') {
      const keyed = keyProblems(`${field}.key`, taint.key, 'taint')
      problems.push(...keyed)
      const restricted = keyed.length === 0 ? restrictedTaintReason(taint.key, permittedNodeKeys) : undefined
      if (restricted !== undefined)
        problems.push({ field: `${field}.key`, message: `${field}.key ${clip(taint.key)} is refused: ${restricted}${PERMIT}` })
    }
    if (typeof taint.value === 'string' && !isLabelValue(taint.value)) {
      problems.push({
        field: `${field}.value`,
        message: `${field}.value ${clip(taint.value)} is not a valid taint value (at most 63 letters, digits, -, _ and ., starting and ending with a letter or digit)`
      })
    }
    // Only string keys and effects are compared: the schema check reports any other type, and
    // `String()` of an object with a `toString` field that is not a function throws.
    if (typeof taint.key !== 'string' || typeof taint.effect !== 'string') return
    const identity = `${taint.key}:${taint.effect}`
    if (seen.has(identity)) {
      problems.push({
        field,
        message: `${field} repeats key ${clip(taint.key)} with effect ${taint.effect}; a Node carries one taint per key and effect`
      })
    }
    seen.add(identity)
  })
  return problems
}

/** A label, annotation or taint key: a qualified name, outside the controller's prefix. */
function keyProblems(field: string, key: string, what: 'label' | 'annotation' | 'taint'): PoolProblem[] {
  if (!isQualifiedName(key)) {
    return [
      {
        field,
        message: `${field}: ${clip(key)} is not a valid ${what} key (an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ and .)`
      }
    ]
  }
  if (what !== 'taint' && key.startsWith(CONTROLLER_PREFIX)) {
    return [{ field, message: `${field}: ${clip(key)} is under cells.kubeswift.io/, which the controller keeps for itself` }]
  }
  return []
}

/**
 * Whether a pending Pod could land on a pool Node, judged from what such a Node carries (the pool's
 * labels and taints, docs/workload.md, "demand"): its `nodeSelector` and required node affinity
 * match the labels, and it tolerates every `NoSchedule`/`NoExecute` taint. Kubernetes' rules, for
 * the parts a Node yet to be built can be judged on: a term on fields (a Node's name) never matches.
 */
import type { Taint } from '../../../api/cellnodeset.ts'
import { isRecord } from '../../../k8s/objects.ts'
import { requirementMatches } from '../../../k8s/label-selector.ts'

/** Whether a Pod of `podSpec` could be scheduled on a Node with `labels` and `taints`. */
export function landsOn(podSpec: Record<string, unknown>, labels: Readonly<Record<string, string>>, taints: readonly Taint[]): boolean {
  return (
    selectorMatches(podSpec.nodeSelector, labels) && affinityMatches(podSpec.affinity, labels) && toleratesAll(podSpec.tolerations, taints)
  )
}

function labelValue(labels: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(labels, key) ? labels[key] : undefined
}

function selectorMatches(selector: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (selector === undefined || selector === null) return true
  if (!isRecord(selector)) return false
  return Object.entries(selector).every(([key, value]) => labelValue(labels, key) === value)
}

/** Required node affinity: the terms are ORed, the expressions of a term ANDed (Kubernetes' rule). */
function affinityMatches(affinity: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (!isRecord(affinity) || !isRecord(affinity.nodeAffinity)) return true
  const required = affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
  if (required === undefined || required === null) return true
  if (!isRecord(required) || !Array.isArray(required.nodeSelectorTerms)) return false
  return required.nodeSelectorTerms.some((term) => termMatches(term, labels))
}

function termMatches(term: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (!isRecord(term)) return false
  const expressions = Array.isArray(term.matchExpressions) ? term.matchExpressions : []
  // A term on fields names particular Nodes (metadata.name); a Node yet to be built has no name to match.
  if (Array.isArray(term.matchFields) && term.matchFields.length > 0) return false
  if (expressions.length === 0) return false
  return expressions.every((e) => expressionMatches(e, labels))
}

function expressionMatches(expression: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (!isRecord(expression) || typeof expression.key !== 'string') return false
  const value = labelValue(labels, expression.key)
  const values = Array.isArray(expression.values) ? expression.values.filter((v): v is string => typeof v === 'string') : []
  const setBased = requirementMatches(expression.operator, value, values)
  if (setBased !== undefined) return setBased
  switch (expression.operator) {
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0] as string)) return false
      return expression.operator === 'Gt' ? Number(value) > Number(values[0]) : Number(value) < Number(values[0])
    }
    default:
      return false
  }
}

/** Every NoSchedule and NoExecute taint of the pool's Nodes is tolerated. */
function toleratesAll(tolerations: unknown, taints: readonly Taint[]): boolean {
  const list = Array.isArray(tolerations) ? tolerations.filter(isRecord) : []
  return taints
    .filter((taint) => taint.effect === 'NoSchedule' || taint.effect === 'NoExecute')
    .every((taint) => list.some((toleration) => tolerates(toleration, taint)))
}

function tolerates(toleration: Record<string, unknown>, taint: Taint): boolean {
  const effect = toleration.effect
  if (effect !== undefined && effect !== '' && effect !== taint.effect) return false
  const key = typeof toleration.key === 'string' ? toleration.key : ''
  if (toleration.operator === 'Exists') return key === '' || key === taint.key
  if (toleration.operator !== undefined && toleration.operator !== 'Equal') return false
  const value = typeof toleration.value === 'string' ? toleration.value : ''
  return key === taint.key && value === (taint.value ?? '')
}

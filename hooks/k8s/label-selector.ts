/**
 * Kubernetes' LabelSelector (`metav1.LabelSelector`): its rules, a matcher and a sentence (its
 * schema for a CRD field is hooks/api/label-selector.ts), as apimachinery's `LabelSelectorAsSelector` reads it:
 *
 * - `matchLabels` and `matchExpressions` are ANDed; an absent or empty selector matches everything.
 * - `In` needs the key with one of the values; `NotIn` matches a missing key or a value not
 *   listed; `Exists` and `DoesNotExist` test the key alone.
 * - `In` and `NotIn` need at least one value, `Exists` and `DoesNotExist` none; keys are qualified
 *   names, values label values. A selector that breaks a rule matches nothing here (the API server
 *   refuses to build a selector from it; refusing is the safe side of an access rule).
 *
 * Bounds (the schema's): 64 labels, 32 expressions of 64 values each, so that the CEL of an
 * admission policy reading the selector stays within the API server's cost limit.
 */
import { isLabelValue, isQualifiedName } from './names.ts'
import { isRecord, ownValue } from './objects.ts'

export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const

export const MAX_MATCH_LABELS = 64
export const MAX_MATCH_EXPRESSIONS = 32
export const MAX_EXPRESSION_VALUES = 64

/** The rules a selector breaks, each naming the field under `at`; empty when it is well-formed. */
export function labelSelectorProblems(selector: unknown, at: string): string[] {
  if (selector === undefined) return []
  if (!isRecord(selector)) return [`${at} must be an object (a LabelSelector)`]
  const problems: string[] = []
  const labels = selector.matchLabels
  if (labels !== undefined) {
    if (!isRecord(labels)) problems.push(`${at}.matchLabels must be a map of label keys to values`)
    else {
      const keys = Object.keys(labels)
      if (keys.length > MAX_MATCH_LABELS) problems.push(`${at}.matchLabels has ${keys.length} labels; at most ${MAX_MATCH_LABELS}`)
      for (const key of keys.slice(0, MAX_MATCH_LABELS)) {
        const value = ownValue(labels, key)
        if (!isQualifiedName(key)) problems.push(`${at}.matchLabels: ${cut(key)} is not a label key`)
        if (typeof value !== 'string' || !isLabelValue(value)) problems.push(`${at}.matchLabels[${cut(key)}] is not a label value`)
      }
    }
  }
  const expressions = selector.matchExpressions
  if (expressions !== undefined) {
    if (!Array.isArray(expressions)) problems.push(`${at}.matchExpressions must be a list`)
    else {
      if (expressions.length > MAX_MATCH_EXPRESSIONS) {
        problems.push(`${at}.matchExpressions has ${expressions.length} entries; at most ${MAX_MATCH_EXPRESSIONS}`)
      }
      expressions.slice(0, MAX_MATCH_EXPRESSIONS).forEach((entry: unknown, i) => {
        problems.push(...expressionProblems(entry, `${at}.matchExpressions[${i}]`))
      })
    }
  }
  return problems
}

function expressionProblems(entry: unknown, at: string): string[] {
  if (!isRecord(entry)) return [`${at} must be an object with key and operator`]
  const problems: string[] = []
  if (typeof entry.key !== 'string' || !isQualifiedName(entry.key)) problems.push(`${at}.key must be a label key`)
  const operator = entry.operator
  if (typeof operator !== 'string' || !(SELECTOR_OPERATORS as readonly string[]).includes(operator)) {
    problems.push(`${at}.operator must be one of ${SELECTOR_OPERATORS.join(', ')}`)
    return problems
  }
  const values = entry.values === undefined ? [] : entry.values
  if (!Array.isArray(values)) return [...problems, `${at}.values must be a list of label values`]
  if (values.length > MAX_EXPRESSION_VALUES) problems.push(`${at}.values has ${values.length} entries; at most ${MAX_EXPRESSION_VALUES}`)
  if (values.some((v) => typeof v !== 'string' || !isLabelValue(v))) problems.push(`${at}.values must all be label values`)
  const listed = operator === 'In' || operator === 'NotIn'
  if (listed && values.length === 0) problems.push(`${at}.values must list at least one value for operator ${operator}`)
  if (!listed && values.length > 0) problems.push(`${at}.values must be empty for operator ${operator}`)
  return problems
}

/** Whether `labels` satisfy the selector; a malformed selector matches nothing. */
export function selectorMatches(selector: unknown, labels: unknown): boolean {
  if (selector === undefined) return true
  if (labelSelectorProblems(selector, 'selector').length > 0 || !isRecord(selector)) return false
  const has = (key: string): string | undefined => {
    const value = isRecord(labels) ? ownValue(labels, key) : undefined
    return typeof value === 'string' ? value : undefined
  }
  const matchLabels = isRecord(selector.matchLabels) ? selector.matchLabels : {}
  for (const key of Object.keys(matchLabels)) {
    if (has(key) !== ownValue(matchLabels, key)) return false
  }
  const expressions = Array.isArray(selector.matchExpressions) ? (selector.matchExpressions as unknown[]) : []
  return expressions.every((entry) => {
    const e = entry as { key: string; operator: string; values?: string[] }
    return requirementMatches(e.operator, has(e.key), e.values ?? []) === true
  })
}

/**
 * One set-based requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`) on a label's value
 * (undefined: the label is absent); undefined for any other operator. Node selector terms share
 * these four with LabelSelectors.
 */
export function requirementMatches(operator: unknown, value: string | undefined, values: readonly string[]): boolean | undefined {
  switch (operator) {
    case 'In':
      return value !== undefined && values.includes(value)
    case 'NotIn':
      return value === undefined || !values.includes(value)
    case 'Exists':
      return value !== undefined
    case 'DoesNotExist':
      return value === undefined
    default:
      return undefined
  }
}

/** The selector in words: `gpu-tier=a100, zone in (a, b), !legacy`; `every namespace` when it is empty. */
export function describeSelector(selector: unknown, everything = 'every namespace'): string {
  if (!isRecord(selector)) return everything
  const parts: string[] = []
  const matchLabels = isRecord(selector.matchLabels) ? selector.matchLabels : {}
  for (const key of Object.keys(matchLabels).sort().slice(0, MAX_MATCH_LABELS))
    parts.push(`${cut(key)}=${cut(String(ownValue(matchLabels, key)))}`)
  const expressions = Array.isArray(selector.matchExpressions) ? (selector.matchExpressions as unknown[]) : []
  for (const entry of expressions.slice(0, MAX_MATCH_EXPRESSIONS)) {
    if (!isRecord(entry)) continue
    const key = cut(String(entry.key))
    const values = Array.isArray(entry.values) ? entry.values.slice(0, 8).map((v) => cut(String(v))) : []
    const more = Array.isArray(entry.values) && entry.values.length > 8 ? ', …' : ''
    if (entry.operator === 'In') parts.push(`${key} in (${values.join(', ')}${more})`)
    else if (entry.operator === 'NotIn') parts.push(`${key} notin (${values.join(', ')}${more})`)
    else if (entry.operator === 'Exists') parts.push(key)
    else parts.push(`!${key}`)
  }
  return parts.length > 0 ? parts.join(', ') : everything
}

/** A key or value as a message shows it: at most 63 characters. */
function cut(text: string): string {
  return text.length > 63 ? `${text.slice(0, 63)}…` : text
}

/**
 * A cell's cloud-init, rendered from the pool's join template (cellpool.md item 1).
 *
 * The token set is closed: a name alone between `{{` and `}}` (spaces allowed) must be one of the
 * eight tokens below, or the template is refused naming it, because a misspelt token left in a
 * boot script makes a node that joins wrong without a word. Anything else between braces (cloud-
 * init's Jinja, `{{ v1.local_hostname }}`) is left exactly as written. The first five tokens are
 * gpucellpool's, so its join templates work unchanged; the last three are this product's.
 *
 * A template without `{{ nodeLabels }}` is refused too: the pool-uid label must reach the Node at
 * registration, or the workload agent never writes that Node and the cell never becomes Ready.
 */
import type { Taint } from '../api/cellnodeset.ts'
import { cellLabels, cellName } from './children.ts'
import { kubeletMaySetLabel, type ResolvedPool } from './validate.ts'

/** The per-cell values of the tokens. */
export interface BootstrapValues {
  cellName: string
  poolName: string
  /** `k=v,k=v` for kubelet `--node-labels` ({@link nodeLabelsToken}). */
  nodeLabels: string
  nodeIPInterface: string
  expectedGPUs: number
  nodeName: string
  cellIndex: number
  /** `k=v:Effect,k:Effect` for kubelet `--register-with-taints` ({@link nodeTaintsToken}). */
  nodeTaints: string
}

/** The tokens, in the order the table of cellpool.md lists them. */
export const BOOTSTRAP_TOKENS = [
  'cellName',
  'poolName',
  'nodeLabels',
  'nodeIPInterface',
  'expectedGPUs',
  'nodeName',
  'cellIndex',
  'nodeTaints'
] as const satisfies ReadonlyArray<keyof BootstrapValues>

/** A bare name between double braces; anything with a dot, an underscore or an operator is not one. */
const TOKEN = /\{\{\s*([A-Za-z][A-Za-z0-9]*)\s*\}\}/g

/**
 * The template with every token replaced, or the problem that keeps it from being used: an
 * unknown bare name (all of them named, sorted), no `{{ nodeLabels }}`, or an empty template.
 */
export function renderBootstrap(template: string, values: BootstrapValues): { text: string } | { problem: string } {
  if (template.trim() === '') return { problem: 'the join template is empty' }
  const known = new Map<string, string>(BOOTSTRAP_TOKENS.map((token) => [token, String(values[token])]))
  const unknown = new Set<string>()
  let hasNodeLabels = false
  // One pass: a value is never scanned again, so a value that looks like a token stays as it is.
  const text = template.replace(TOKEN, (match, name: string) => {
    const value = known.get(name)
    if (value === undefined) {
      unknown.add(name)
      return match
    }
    if (name === 'nodeLabels') hasNodeLabels = true
    return value
  })
  if (unknown.size > 0) {
    const names = [...unknown]
      .sort()
      .map((n) => `{{ ${n} }}`)
      .join(', ')
    return {
      problem:
        `the join template uses ${names}, which ${unknown.size === 1 ? 'is not a token' : 'are not tokens'}; ` +
        `the tokens are ${BOOTSTRAP_TOKENS.map((t) => `{{ ${t} }}`).join(', ')}`
    }
  }
  if (!hasNodeLabels) {
    return {
      problem:
        'the join template has no {{ nodeLabels }}: the kubelet must register the cell labels (pool-uid among them) ' +
        'with --node-labels, or the workload agent never manages the Node and the cell never becomes Ready'
    }
  }
  return { text }
}

/**
 * The `--node-labels` value: the pool's node labels plus the cell labels (the cell labels win on
 * a clash), only those a kubelet may set on itself, as `k=v` sorted by key and comma-joined.
 */
export function nodeLabelsToken(labels: Readonly<Record<string, string>>, cell: Readonly<Record<string, string>>): string {
  const merged = new Map<string, string>()
  for (const [key, value] of Object.entries(labels)) merged.set(key, value)
  for (const [key, value] of Object.entries(cell)) merged.set(key, value)
  return [...merged]
    .filter(([key]) => kubeletMaySetLabel(key))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join(',')
}

/** The `--register-with-taints` value: `key=value:Effect` or `key:Effect`, comma-joined, in spec order. */
export function nodeTaintsToken(taints: readonly Taint[]): string {
  return taints.map((t) => (t.value !== undefined && t.value !== '' ? `${t.key}=${t.value}:${t.effect}` : `${t.key}:${t.effect}`)).join(',')
}

/** The token values of cell `index` of a pool. */
export function bootstrapValues(poolName: string, poolUID: string, pool: ResolvedPool, index: number): BootstrapValues {
  const name = cellName(poolName, index)
  return {
    cellName: name,
    poolName,
    nodeLabels: nodeLabelsToken(pool.workload.labels, cellLabels(poolName, poolUID, name, index)),
    nodeIPInterface: pool.nodeIPFrom,
    expectedGPUs: pool.gpu.count,
    nodeName: name,
    cellIndex: index,
    nodeTaints: nodeTaintsToken(pool.workload.taints)
  }
}

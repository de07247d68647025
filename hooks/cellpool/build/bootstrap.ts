/**
 * A cell's cloud-init, rendered from the pool's join template (docs/cellpool.md item 1).
 *
 * The token set is closed: a name alone between `{{` and `}}` (spaces allowed) must be one of the
 * eight tokens below, or the template is refused naming it, because a misspelt token left in a
 * boot script makes a node that joins wrong without a word. Anything else between braces (cloud-
 * init's Jinja, `{{ v1.local_hostname }}`) is left exactly as written. The first five tokens are
 * gpucellpool's, so its join templates work unchanged; the last three are this product's.
 *
 * A template without `{{ nodeLabels }}` is refused too: the pool-uid label must reach the Node at
 * registration, or the workload agent never writes that Node and the cell never becomes Ready.
 *
 * The join template is a tenant's, up to the 1 MiB of a Secret, and a token may repeat: its
 * rendering is bounded (model/limits.ts) by counting tokens and adding up the values' lengths before
 * anything is built. Every value is a DNS label, a number, or labels and taints the spec checks
 * admitted; a value with a control character is refused all the same, so that nothing a spec
 * check misses can break a line of a boot script.
 */
import type { Taint } from '../../api/cellnodeset.ts'
import { cellLabels } from '../request/cell-names.ts'
import { cellName } from '../../api/cellnodeset.ts'
import { kubeletMaySetLabel } from '../../k8s/node-keys.ts'
import { KiB, MAX_BOOTSTRAP_BYTES, MAX_TEMPLATE_TOKENS, MiB } from '../model/limits.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'

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

/** The tokens, in the order the table of docs/cellpool.md lists them. */
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

/** A control character (C0, DEL, C1): none may reach a boot script through a token's value. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** What one pass over a template found, before anything is replaced. */
interface TemplateScan {
  /** Occurrences of each known token. */
  counts: Map<(typeof BOOTSTRAP_TOKENS)[number], number>
  /** Bare names that are not tokens. */
  unknown: Set<string>
  /** Bytes of every token as written (`{{ nodeLabels }}`), which the values replace. */
  tokenBytes: number
  /** The scan stopped at the token past {@link MAX_TEMPLATE_TOKENS}. */
  tooMany: boolean
}

const KNOWN = new Set<string>(BOOTSTRAP_TOKENS)
const isToken = (name: string): name is (typeof BOOTSTRAP_TOKENS)[number] => KNOWN.has(name)

/** Counts the template's tokens without building anything; stops past {@link MAX_TEMPLATE_TOKENS}. */
function scanTemplate(template: string): TemplateScan {
  const scan: TemplateScan = { counts: new Map(), unknown: new Set(), tokenBytes: 0, tooMany: false }
  let seen = 0
  for (const match of template.matchAll(TOKEN)) {
    if (++seen > MAX_TEMPLATE_TOKENS) {
      scan.tooMany = true
      break
    }
    const name = match[1] ?? ''
    scan.tokenBytes += Buffer.byteLength(match[0])
    if (isToken(name)) scan.counts.set(name, (scan.counts.get(name) ?? 0) + 1)
    else scan.unknown.add(name)
  }
  return scan
}

/**
 * The template with every token replaced, or the problem that keeps it from being used: more
 * than {@link MAX_TEMPLATE_TOKENS} tokens, an unknown bare name (all of them named, sorted), no
 * `{{ nodeLabels }}`, an empty template, a value with a control character, or a rendering past
 * {@link MAX_BOOTSTRAP_BYTES}. The size is computed from the token counts and the values' lengths
 * before any string is built, so a template that repeats a long token cannot cost memory.
 */
export function renderBootstrap(template: string, values: BootstrapValues): { text: string } | { problem: string } {
  if (template.trim() === '') return { problem: 'the join template is empty' }
  const scan = scanTemplate(template)
  if (scan.tooMany) {
    return { problem: `the join template has more than ${MAX_TEMPLATE_TOKENS} tokens ({{ name }}); a join template needs a few` }
  }
  if (scan.unknown.size > 0) {
    const names = [...scan.unknown]
      .sort()
      .map((n) => `{{ ${n} }}`)
      .join(', ')
    return {
      problem:
        `the join template uses ${names}, which ${scan.unknown.size === 1 ? 'is not a token' : 'are not tokens'}; ` +
        `the tokens are ${BOOTSTRAP_TOKENS.map((t) => `{{ ${t} }}`).join(', ')}`
    }
  }
  if (!scan.counts.has('nodeLabels')) {
    return {
      problem:
        'the join template has no {{ nodeLabels }}: the kubelet must register the cell labels (pool-uid among them) ' +
        'with --node-labels, or the workload agent never manages the Node and the cell never becomes Ready'
    }
  }
  const known = new Map<string, string>(BOOTSTRAP_TOKENS.map((token) => [token, String(values[token])]))
  let bytes = Buffer.byteLength(template) - scan.tokenBytes
  let largest = { token: '', bytes: 0, count: 0 }
  for (const [token, count] of scan.counts) {
    const value = known.get(token) ?? ''
    if (CONTROL.test(value)) {
      return {
        problem: `the value of {{ ${token} }} for cell ${values.cellName} holds a control character; it cannot go into a boot script`
      }
    }
    const added = count * Buffer.byteLength(value)
    bytes += added
    if (added > largest.bytes) largest = { token, bytes: added, count }
  }
  if (bytes > MAX_BOOTSTRAP_BYTES) {
    return {
      problem:
        `the join template renders to ${bytes} bytes for cell ${values.cellName}, past the bound of ${bytesText(MAX_BOOTSTRAP_BYTES)} ` +
        `of bootstrap data per cell (its Secret, and Metacontroller's record of it in an annotation, hold it twice each); ` +
        `{{ ${largest.token} }} alone adds ${largest.bytes} bytes ` +
        `(${largest.count} times)`
    }
  }
  // One pass: a value is never scanned again, so a value that looks like a token stays as it is.
  return { text: template.replace(TOKEN, (match, name: string) => known.get(name) ?? match) }
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

/** A byte count as a bound's message shows it (here and build/sizes.ts): `262144 bytes (256 KiB)`. */
export function bytesText(bytes: number): string {
  if (bytes >= MiB && bytes % (MiB / 2) === 0) return `${bytes} bytes (${bytes / MiB} MiB)`
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes} bytes (${bytes / KiB} KiB)`
  return `${bytes} bytes`
}

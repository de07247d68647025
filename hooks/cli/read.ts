/**
 * The files of `gpuhooks render` read into Kubernetes objects (run.ts). Every problem is an
 * {@link InputError} naming the file, which the CLI answers with exit 2, for any file at all: the
 * input is the user's own, but a CLI still owes an answer rather than a crash or gigabytes of
 * memory. So each file is read only up to {@link MAX_INPUT_BYTES}, checked before parsing; an
 * alias or merge-key bomb stops at {@link MAX_ALIAS_COUNT} expansions; a parser stack exhausted
 * by nesting is named as such; repeated keys are found in linear time (the parser's own check is
 * quadratic); and a value nested past `MAX_JSON_DEPTH` (100) levels, or holding
 * an alias to its own ancestor, is refused before any recursive code (schema checks, the hooks,
 * the printer) sees it.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { isMap, isScalar, isSeq, parseAllDocuments } from 'yaml'
import { MAX_JSON_DEPTH, jsonDeeperThan } from '../k8s/json.ts'
import { isRecord } from '../k8s/objects.ts'

/** A problem with the input: printed as `gpuhooks render: <message>`, exit code 2. */
export class InputError extends Error {}

/** An object read from a file: a mapping with apiVersion, kind and metadata.name. */
export type KubeObject = Record<string, unknown> & { metadata: Record<string, unknown> }

/**
 * The largest input file (8 MiB), checked before it is parsed: far above any manifest, and a
 * parse of YAML costs tens of times its size in memory (64 MiB took 2.3 GB).
 */
export const MAX_INPUT_BYTES = 8 * 1024 * 1024
/** At most this many alias expansions per document: an alias or merge-key bomb stops here. */
export const MAX_ALIAS_COUNT = 100

/** The text of `file`, refused past {@link MAX_INPUT_BYTES} (for a pipe or device too, as it is read). */
function readBounded(file: string): string {
  const tooLarge = (bytes: string): InputError =>
    new InputError(`${file}: ${bytes} bytes, past the bound of ${MAX_INPUT_BYTES} bytes (8 MiB) on an input file`)
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (err) {
    throw new InputError(`${file}: cannot read (${errorCode(err)})`)
  }
  try {
    const size = fstatSync(fd).size
    if (size > MAX_INPUT_BYTES) throw tooLarge(String(size))
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024)
      const read = readSync(fd, chunk, 0, chunk.length, null)
      if (read === 0) break
      total += read
      if (total > MAX_INPUT_BYTES) throw tooLarge(`more than ${MAX_INPUT_BYTES}`)
      chunks.push(chunk.subarray(0, read))
    }
    return Buffer.concat(chunks).toString('utf8')
  } catch (err) {
    if (err instanceof InputError) throw err
    throw new InputError(`${file}: cannot read (${errorCode(err)})`)
  } finally {
    closeSync(fd)
  }
}

function quoteKey(key: string): string {
  const shown = JSON.stringify(key)
  return shown.length > 60 ? `${shown.slice(0, 60)}…` : shown
}

function errorCode(err: unknown): string {
  return isRecord(err) && typeof err.code === 'string' ? err.code : 'unreadable'
}

/** A parser's failure as a sentence: a stack exhausted by nesting is said so, not quoted. */
function yamlFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  if (err instanceof RangeError || message.includes('call stack')) return `nested too deeply to read (at most ${MAX_JSON_DEPTH} levels)`
  return `not valid YAML: ${message}`
}

type YamlDocument = ReturnType<typeof parseAllDocuments>[number]

/**
 * The first key a mapping of `doc` repeats, or undefined. The parser's own check compares every
 * key with every other (a file of 40,000 keys took minutes), so the parser is told not to, and
 * this walk does it with one set per mapping, iteratively. Keys compare as the parser compares
 * scalars: by type and value. Merge keys (`<<`) may repeat.
 */
function repeatedKey(doc: YamlDocument): string | undefined {
  const nodes: unknown[] = [doc.contents]
  for (let node = nodes.pop(); node !== undefined; node = nodes.pop()) {
    if (isSeq(node)) for (const item of node.items) nodes.push(item)
    if (!isMap(node)) continue
    const seen = new Set<string>()
    for (const pair of node.items) {
      nodes.push(pair.value)
      if (!isScalar(pair.key)) continue
      const value = pair.key.value
      if (value === '<<') continue
      const identity = `${typeof value}\u0000${String(value)}`
      if (seen.has(identity)) return String(value)
      seen.add(identity)
    }
  }
  return undefined
}

/** A parsed document as plain data, aliases expanded at most {@link MAX_ALIAS_COUNT} times. */
function toValue(doc: YamlDocument, where: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown
  } catch (err) {
    if (err instanceof ReferenceError)
      throw new InputError(`${where}: its aliases (or merge keys) expand past ${MAX_ALIAS_COUNT} copies; write the repeated parts out`)
    throw new InputError(`${where}: ${yamlFailure(err)}`)
  }
}

/** Reads every object of a multi-document YAML file (List objects unpacked); names the file in every error. */
export function readObjects(file: string): KubeObject[] {
  const text = readBounded(file)
  const objects: KubeObject[] = []
  let docs: ReturnType<typeof parseAllDocuments>
  try {
    docs = parseAllDocuments(text, { uniqueKeys: false })
  } catch (err) {
    throw new InputError(`${file}: ${yamlFailure(err)}`)
  }
  if (!Array.isArray(docs)) throw new InputError(`${file}: not YAML`)
  docs.forEach((doc, index) => {
    const where = `${file}: document ${index + 1}`
    if (doc.errors.length > 0) throw new InputError(`${where}: ${yamlFailure(doc.errors[0])}`)
    const repeated = repeatedKey(doc)
    if (repeated !== undefined) throw new InputError(`${where}: not valid YAML: the key ${quoteKey(repeated)} repeats in one mapping`)
    const value = toValue(doc, where)
    // Everything after this walks the objects recursively; an alias to its own ancestor never ends.
    if (jsonDeeperThan(value))
      throw new InputError(
        `${where}: nested deeper than ${MAX_JSON_DEPTH} levels (or an alias to its own ancestor); no Kubernetes object is`
      )
    if (value === null || value === undefined) return
    const isList = isRecord(value) && typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items)
    const items: unknown[] = isList ? (value.items as unknown[]) : [value]
    items.forEach((item, i) => objects.push(checkObject(item, isList ? `${where} item ${i + 1}` : where)))
  })
  return objects
}

function checkObject(value: unknown, where: string): KubeObject {
  if (!isRecord(value)) throw new InputError(`${where}: not a Kubernetes object (a mapping with apiVersion, kind and metadata)`)
  if (typeof value.apiVersion !== 'string' || value.apiVersion === '') throw new InputError(`${where}: apiVersion is missing`)
  if (typeof value.kind !== 'string' || value.kind === '') throw new InputError(`${where}: kind is missing`)
  const metadata = value.metadata
  if (!isRecord(metadata) || typeof metadata.name !== 'string' || metadata.name === '')
    throw new InputError(`${where}: metadata.name is missing`)
  if (metadata.namespace !== undefined && typeof metadata.namespace !== 'string')
    throw new InputError(`${where}: metadata.namespace is not a string`)
  return value as KubeObject
}

/**
 * A Secret as the API server stores and Metacontroller sends it: `stringData` written into `data`
 * (base64, winning over a `data` key of the same name) and dropped. Manifests such as
 * deploy/examples/cellpool.yaml write their Secrets with stringData; the hooks read data only.
 */
export function asStored(object: KubeObject): KubeObject {
  if (object.apiVersion !== 'v1' || object.kind !== 'Secret' || !isRecord(object.stringData)) return object
  const data = new Map<string, unknown>(isRecord(object.data) ? Object.entries(object.data) : [])
  for (const [key, value] of Object.entries(object.stringData)) {
    if (typeof value === 'string') data.set(key, Buffer.from(value, 'utf8').toString('base64'))
  }
  const { stringData: _dropped, ...rest } = object
  return { ...rest, data: Object.fromEntries(data) }
}

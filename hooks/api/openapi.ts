/**
 * Renders the TypeBox schemas of `hooks/api/` into the structural OpenAPI v3 schemas a
 * CustomResourceDefinition (`apiextensions.k8s.io/v1`) takes as its `openAPIV3Schema`.
 *
 * The TypeBox schema stays the one source of truth (docs/style.md rule 3); this module only translates
 * the few JSON Schema idioms TypeBox emits into the OpenAPI v3 dialect the API server accepts, and
 * refuses (throws, naming the schema path) anything it cannot translate faithfully, so a schema
 * edit that a CRD cannot express fails at `npm run crds` instead of at `kubectl apply`.
 *
 * The rules follow the API server's own checks (k8s.io/apiextensions-apiserver,
 * `pkg/apiserver/schema/validation.go` ValidateStructural and
 * `pkg/apis/apiextensions/validation/validation.go`):
 * - every node has a `type`, except int-or-string (`x-kubernetes-int-or-string` with exactly
 *   `anyOf: [{type: integer}, {type: string}]`) and `x-kubernetes-preserve-unknown-fields` nodes;
 * - `patternProperties`, `$ref`, `const`, `uniqueItems`, `type: null` and tuple `items` are not
 *   supported; `additionalProperties` must not sit beside `properties`, nor at the root;
 * - `anyOf`/`oneOf`/`allOf`/`not` may only repeat structure, so unions become `enum`/`nullable`;
 * - the root `metadata` may constrain only `name` and `generateName` (and carries no description).
 */
import type { TSchema } from '@sinclair/typebox'
import { sortKeysDeep } from '../k8s/hash.ts'

/** One node of an OpenAPI v3 schema as a CRD takes it. */
export interface OpenApiSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean'
  description?: string
  title?: string
  format?: string
  default?: unknown
  example?: unknown
  enum?: unknown[]
  nullable?: boolean
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean
  exclusiveMaximum?: boolean
  multipleOf?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  minItems?: number
  maxItems?: number
  minProperties?: number
  maxProperties?: number
  required?: string[]
  properties?: Record<string, OpenApiSchema>
  additionalProperties?: OpenApiSchema
  items?: OpenApiSchema
  anyOf?: OpenApiSchema[]
  'x-kubernetes-preserve-unknown-fields'?: true
  'x-kubernetes-int-or-string'?: true
  'x-kubernetes-embedded-resource'?: true
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map'
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-map-type'?: 'atomic' | 'granular'
  'x-kubernetes-validations'?: Array<Record<string, unknown>>
}

/** Keywords copied as they are (after the checks below). */
const KEPT = new Set([
  'description',
  'title',
  'format',
  'default',
  'example',
  'enum',
  'nullable',
  'minimum',
  'maximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'required'
])

/** Keywords translated or checked by {@link renderNode}; anything else is refused. */
const HANDLED = new Set([
  'type',
  'properties',
  'additionalProperties',
  'patternProperties',
  'items',
  'anyOf',
  'const',
  'exclusiveMinimum',
  'exclusiveMaximum'
])

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean'])
const TYPES = new Set([...SCALAR_TYPES, 'object', 'array'])

/** The key pattern TypeBox gives `Type.Record(Type.String(), …)`: any key. */
const ANY_KEY_PATTERNS = new Set(['^(.*)$', '^.*$'])

type Json = Record<string, unknown>

function isJsonObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** An error naming the schema path (`.spec.ports[].name`) and what is wrong there. */
export class SchemaRenderError extends Error {
  constructor(path: string, problem: string) {
    super(`${path || '<root>'}: ${problem}`)
    this.name = 'SchemaRenderError'
  }
}

/**
 * Renders a TypeBox schema as a structural OpenAPI v3 schema for `apiextensions.k8s.io/v1`:
 * TypeBox internals (symbol keys) dropped, `Type.Record` as `additionalProperties`, boolean
 * `additionalProperties` dropped (pruning does that job; `x-kubernetes-preserve-unknown-fields`
 * stays where a schema sets it, and an object with no properties but `additionalProperties: true`
 * becomes one that preserves unknown fields), `const` and literal unions as `enum`, a union with
 * `Type.Null()` as `nullable: true`, numeric `exclusiveMinimum`/`exclusiveMaximum` as the OpenAPI
 * v3.0 boolean form, and keys sorted so the output is stable. Throws {@link SchemaRenderError} on
 * anything a structural schema cannot say.
 */
export function renderSchema(schema: TSchema | Json): OpenApiSchema {
  // A JSON round trip drops TypeBox's symbol-keyed internals (Kind, Optional, Hint).
  const plain: unknown = JSON.parse(JSON.stringify(schema))
  if (!isJsonObject(plain)) throw new SchemaRenderError('', 'a schema must be an object')
  return sortKeysDeep(renderNode(plain, ''))
}

function renderNode(node: Json, path: string): OpenApiSchema {
  const source = mergeUnion(node, path)
  for (const key of Object.keys(source)) {
    if (!KEPT.has(key) && !HANDLED.has(key) && !key.startsWith('x-kubernetes-')) {
      throw new SchemaRenderError(path, `keyword ${key} is not supported in a CRD schema`)
    }
  }
  const out: Json = {}

  if (source.type !== undefined) {
    if (typeof source.type !== 'string' || !TYPES.has(source.type)) {
      throw new SchemaRenderError(path, `type ${JSON.stringify(source.type)} is not one of ${[...TYPES].join(', ')}`)
    }
    out.type = source.type
  }
  for (const key of KEPT) {
    if (source[key] !== undefined) out[key] = source[key]
  }
  if (source.const !== undefined) {
    if (source.enum !== undefined) throw new SchemaRenderError(path, 'const beside enum')
    out.enum = [source.const]
  }
  for (const bound of ['exclusiveMinimum', 'exclusiveMaximum'] as const) {
    const value = source[bound]
    if (value === undefined || value === false) continue
    const plainBound = bound === 'exclusiveMinimum' ? 'minimum' : 'maximum'
    if (typeof value === 'number') {
      // JSON Schema 2019 puts the bound in the keyword; OpenAPI v3.0 wants minimum + a flag.
      if (out[plainBound] !== undefined) throw new SchemaRenderError(path, `${bound} beside ${plainBound}`)
      out[plainBound] = value
    } else if (value !== true) {
      throw new SchemaRenderError(path, `${bound} must be a number or a boolean`)
    }
    out[bound] = true
  }
  for (const [key, value] of Object.entries(source)) {
    if (key.startsWith('x-kubernetes-')) out[key] = value
  }

  const properties = source.properties
  if (properties !== undefined) {
    if (!isJsonObject(properties)) throw new SchemaRenderError(path, 'properties must be an object')
    const rendered: Record<string, OpenApiSchema> = {}
    for (const [name, child] of Object.entries(properties)) {
      if (!isJsonObject(child)) throw new SchemaRenderError(`${path}.${name}`, 'a property schema must be an object')
      rendered[name] = renderNode(child, `${path}.${name}`)
    }
    // TypeBox writes `properties: {}` for Type.Object({}); an empty list says nothing.
    if (Object.keys(rendered).length > 0) out.properties = rendered
  }

  const mapValue = mapValueSchema(source, path)
  if (mapValue !== undefined) {
    if (out.properties !== undefined) {
      throw new SchemaRenderError(path, 'properties and a map value schema (additionalProperties) are exclusive in a CRD')
    }
    out.additionalProperties = renderNode(mapValue, `${path}[*]`)
  } else if (source.additionalProperties === true && out.properties === undefined && out.type === 'object') {
    // An open object with no declared fields: keep whatever it holds.
    out['x-kubernetes-preserve-unknown-fields'] = true
  }

  if (source.items !== undefined) {
    if (!isJsonObject(source.items)) throw new SchemaRenderError(path, 'items must be one schema (tuples are not supported)')
    out.items = renderNode(source.items, `${path}[]`)
  }

  if (source.anyOf !== undefined) out.anyOf = intOrStringAnyOf(source, path)

  if (out.type === undefined && out['x-kubernetes-int-or-string'] !== true && out['x-kubernetes-preserve-unknown-fields'] !== true) {
    throw new SchemaRenderError(path, 'a schema node needs a type (or x-kubernetes-int-or-string / x-kubernetes-preserve-unknown-fields)')
  }
  if (out.type === 'array' && out.items === undefined) throw new SchemaRenderError(path, 'an array needs items')
  return out
}

/**
 * Folds a TypeBox union that a structural schema can state without `anyOf` into one node:
 * literals of one type become `enum`, and a `Type.Null()` member becomes `nullable: true`.
 * The int-or-string `anyOf` is left alone (checked in {@link intOrStringAnyOf}).
 */
function mergeUnion(node: Json, path: string): Json {
  const members = node.anyOf
  if (members === undefined || node['x-kubernetes-int-or-string'] === true) return node
  if (!Array.isArray(members) || !members.every(isJsonObject)) throw new SchemaRenderError(path, 'anyOf must be a list of schemas')
  const { anyOf: _members, ...outer } = node
  const nonNull = members.filter((member) => member.type !== 'null')
  const nullable = nonNull.length < members.length

  let merged: Json
  if (nonNull.length === 1) {
    const only = nonNull[0] as Json
    for (const key of Object.keys(only)) {
      if (Object.hasOwn(outer, key) && key !== 'description') throw new SchemaRenderError(path, `union member and union both set ${key}`)
    }
    // The union's own options (description, default) win over the member's.
    merged = { ...only, ...outer }
  } else if (nonNull.length > 1 && nonNull.every((member) => member.const !== undefined)) {
    const types = new Set(nonNull.map((member) => member.type))
    const [type] = types
    if (types.size !== 1 || typeof type !== 'string') {
      throw new SchemaRenderError(path, 'a union of literals must share one type')
    }
    merged = { ...outer, type, enum: nonNull.map((member) => member.const) }
  } else {
    throw new SchemaRenderError(
      path,
      'a structural schema cannot state this union; use literals of one type, T | null, or the Quantity int-or-string'
    )
  }
  if (nullable) {
    if (merged.enum !== undefined || merged.const !== undefined) {
      // kube-openapi's enum check never matches null, so a nullable enum rejects null anyway.
      throw new SchemaRenderError(path, 'a nullable enum cannot be validated by the API server (null never matches enum)')
    }
    merged.nullable = true
  }
  return merged
}

/** The value schema of a string-keyed map (`Type.Record` or a schema-valued additionalProperties). */
function mapValueSchema(node: Json, path: string): Json | undefined {
  const patterns = node.patternProperties
  const additional = node.additionalProperties
  if (patterns !== undefined) {
    if (!isJsonObject(patterns)) throw new SchemaRenderError(path, 'patternProperties must be an object')
    const entries = Object.entries(patterns)
    const [entry] = entries
    if (entries.length !== 1 || entry === undefined || !ANY_KEY_PATTERNS.has(entry[0]) || !isJsonObject(entry[1])) {
      throw new SchemaRenderError(path, 'patternProperties other than Type.Record(Type.String(), …) are not supported in a CRD')
    }
    if (isJsonObject(additional)) throw new SchemaRenderError(path, 'patternProperties beside additionalProperties')
    return entry[1]
  }
  if (isJsonObject(additional)) return additional
  if (additional !== undefined && typeof additional !== 'boolean') {
    throw new SchemaRenderError(path, 'additionalProperties must be a schema or a boolean')
  }
  return undefined
}

/** The one `anyOf` a structural schema allows: int-or-string, exactly as the API server matches it. */
function intOrStringAnyOf(node: Json, path: string): OpenApiSchema[] {
  const expected = [{ type: 'integer' }, { type: 'string' }]
  if (node['x-kubernetes-int-or-string'] !== true || JSON.stringify(node.anyOf) !== JSON.stringify(expected)) {
    throw new SchemaRenderError(path, 'anyOf is only allowed as x-kubernetes-int-or-string with anyOf [{type: integer}, {type: string}]')
  }
  return [{ type: 'integer' }, { type: 'string' }]
}

/**
 * The root of a custom resource schema: the rendered TypeBox schema with `apiVersion` and `kind`
 * described for `kubectl explain`, and `metadata` reduced to `{type: object}` (the API server
 * validates ObjectMeta itself and refuses a root metadata schema that says more, a description
 * included).
 */
export function renderRootSchema(schema: TSchema, apiVersion: string, kind: string): OpenApiSchema {
  const root = renderSchema(schema)
  if (root.type !== 'object' || root.properties === undefined) {
    throw new SchemaRenderError('', 'the root of a custom resource schema must be an object with properties')
  }
  for (const field of ['apiVersion', 'kind', 'metadata']) {
    if (root.properties[field] === undefined) throw new SchemaRenderError('', `the root schema must declare ${field}`)
  }
  if (root.properties.apiVersion?.type !== 'string' || root.properties.kind?.type !== 'string') {
    throw new SchemaRenderError('', 'apiVersion and kind must be strings')
  }
  const properties: Record<string, OpenApiSchema> = {
    ...root.properties,
    apiVersion: { description: `API group and version of this object: ${apiVersion}.`, type: 'string' },
    kind: { description: `Kind of this object: ${kind}.`, type: 'string' },
    metadata: { type: 'object' }
  }
  return sortKeysDeep({ ...root, properties })
}

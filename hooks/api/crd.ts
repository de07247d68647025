/**
 * The product's CustomResourceDefinitions as objects (`apiextensions.k8s.io/v1`): one served and
 * stored version per kind, its structural schema rendered from TypeBox by `openapi.ts`, its
 * subresources and printer columns.
 */
import type { TSchema } from '@sinclair/typebox'
import { renderRootSchema, type OpenApiSchema } from './openapi.ts'

/** An additional printer column (`kubectl get`). */
export interface PrinterColumn {
  name: string
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date'
  jsonPath: string
  description: string
  priority?: number
}

/** What one CustomResourceDefinition of the product is made of. */
export interface CrdOptions {
  /** `<group>/<version>` of the kind: the CRD's group and its one version. */
  apiVersion: string
  /** The kind; the singular is its lower case, and the plural that with an `s` unless `plural` says otherwise. */
  kind: string
  plural?: string
  shortNames?: string[]
  categories?: string[]
  scope: 'Namespaced' | 'Cluster'
  /** The TypeBox schema of the whole object (apiVersion, kind, metadata, spec/status or fields). */
  schema: TSchema
  /** Adds the `status` subresource (needed for a Metacontroller parent). */
  statusSubresource: boolean
  /**
   * Adds the `scale` subresource, so `kubectl scale`, an HPA or KEDA can drive the object; paths
   * are JSON paths such as `.spec.replicas`.
   */
  scaleSubresource?: ScaleSubresource
  printerColumns: PrinterColumn[]
}

/** The `scale` subresource of a CRD version. */
export interface ScaleSubresource {
  specReplicasPath: string
  statusReplicasPath: string
  labelSelectorPath?: string
}

/** A CustomResourceDefinition as the product writes it. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1'
  kind: 'CustomResourceDefinition'
  metadata: { name: string; labels: Record<string, string> }
  spec: {
    group: string
    names: {
      kind: string
      listKind: string
      plural: string
      singular: string
      shortNames?: string[]
      categories?: string[]
    }
    scope: 'Namespaced' | 'Cluster'
    versions: Array<{
      name: string
      served: boolean
      storage: boolean
      schema: { openAPIV3Schema: OpenApiSchema }
      subresources?: { status?: Record<string, never>; scale?: ScaleSubresource }
      additionalPrinterColumns: PrinterColumn[]
    }>
  }
}

/** Builds the CustomResourceDefinition of one kind, with a single served and stored version. */
export function crdFor(options: CrdOptions): CustomResourceDefinition {
  const [group, version, ...rest] = options.apiVersion.split('/')
  if (group === undefined || group === '' || version === undefined || version === '' || rest.length > 0) {
    throw new Error(`not a group/version: ${options.apiVersion}`)
  }
  const singular = options.kind.toLowerCase()
  const plural = options.plural ?? `${singular}s`
  const names: CustomResourceDefinition['spec']['names'] = { kind: options.kind, listKind: `${options.kind}List`, plural, singular }
  if (options.shortNames !== undefined) names.shortNames = [...options.shortNames]
  if (options.categories !== undefined) names.categories = [...options.categories]
  const crdVersion: CustomResourceDefinition['spec']['versions'][number] = {
    name: version,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: renderRootSchema(options.schema, options.apiVersion, options.kind) },
    additionalPrinterColumns: options.printerColumns.map((printerColumn) => ({ ...printerColumn }))
  }
  if (options.statusSubresource) crdVersion.subresources = { status: {} }
  if (options.scaleSubresource !== undefined) {
    crdVersion.subresources = { ...crdVersion.subresources, scale: { ...options.scaleSubresource } }
  }
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${group}`,
      labels: { 'app.kubernetes.io/part-of': 'gpuhooks' }
    },
    spec: {
      group,
      names,
      scope: options.scope,
      versions: [crdVersion]
    }
  }
}

/** A printer column (`kubectl get`), in the order name, type, JSON path, description. */
export function column(name: string, type: PrinterColumn['type'], jsonPath: string, description: string): PrinterColumn {
  return { name, type, jsonPath, description }
}

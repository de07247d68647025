/**
 * The controllers' descriptors (hooks/controllers.ts) carried into the chart and into
 * `metacontroller/`, both written by `npm run chart`:
 *
 * - `files/controllers.yaml`: per controller, in the descriptors' order, what the chart's
 *   templates need to install only what is used: its Metacontroller name; `needs`, the kinds
 *   (`group/version/Kind`, as Helm's `.Capabilities.APIVersions.Has` takes them) its manifest's
 *   child types ask of the cluster beyond Kubernetes' own and the CRDs of `crds/`, which decide
 *   `controllers.<name>.enabled: auto`; `crds`, the CRDs of `crds/` it reads or writes; its
 *   admission webhook; and each group of optional child types with its own `needs` and the
 *   `childResources` entries the chart appends;
 * - `metacontroller/clusterapi/cellpool.yaml`: the cell pool controller with its optional Cluster
 *   API child types, whole, for `kubectl apply` in place of `metacontroller/cellpool.yaml`.
 *
 * Metacontroller starts no controller one of whose child types the cluster does not serve
 * ("can't find child resource"), so a controller whose needs are not served is left out.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments, parseDocument, stringify, type YAMLSeq } from 'yaml'
import { CONTROLLERS } from '../../hooks/controllers.ts'
import type { DeclaredType } from '../../hooks/metacontroller/answer-guard.ts'
import type { ControllerDescriptor } from '../../hooks/metacontroller/descriptor.ts'

/** A CRD of `crds/`, by its group, version and plural. */
interface ShippedCrd {
  name: string
  group: string
  versions: string[]
  plural: string
}

/** The CRDs this repository ships. */
function shippedCrds(root: string): ShippedCrd[] {
  const dir = join(root, 'crds')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Record<string, any> | null))
    .filter((d) => d?.kind === 'CustomResourceDefinition')
    .map((d) => ({
      name: d?.metadata.name as string,
      group: d?.spec.group as string,
      versions: (d?.spec.versions as Array<{ name: string }>).map((v) => v.name),
      plural: d?.spec.names.plural as string
    }))
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/')
  return slash < 0 ? '' : apiVersion.slice(0, slash)
}

/**
 * Whether Kubernetes itself serves the type's group: the core group, the unqualified groups
 * (`apps`, `batch`) and those under `k8s.io` (`networking.k8s.io`). Cluster API's
 * `cluster.x-k8s.io` is not one of them.
 */
function builtIn(type: DeclaredType): boolean {
  const group = groupOf(type.apiVersion)
  return group === '' || !group.includes('.') || group.endsWith('.k8s.io')
}

function shippedAs(crds: readonly ShippedCrd[], type: DeclaredType): ShippedCrd | undefined {
  const group = groupOf(type.apiVersion)
  const version = type.apiVersion.slice(group.length + 1)
  return crds.find((c) => c.group === group && c.plural === type.resource && c.versions.includes(version))
}

/** What the cluster must serve for these types: each as `group/version/Kind`. */
function needs(crds: readonly ShippedCrd[], types: readonly DeclaredType[]): string[] {
  return types.filter((t) => !builtIn(t) && shippedAs(crds, t) === undefined).map((t) => `${t.apiVersion}/${t.kind}`)
}

/** The `childResources` of a controller's manifest in `metacontroller/`. */
function manifestChildren(root: string, controller: ControllerDescriptor): Array<Record<string, any>> {
  const dir = join(root, 'metacontroller')
  const doc = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Record<string, any> | null))
    .find((d) => d?.metadata?.name === controller.rule.controller)
  if (doc === undefined || doc === null) throw new Error(`metacontroller/ has no controller ${controller.rule.controller}`)
  return (doc.spec.childResources ?? doc.spec.attachments ?? []) as Array<Record<string, any>>
}

/**
 * The manifest entry of an optional child type: with the update strategy every child of the
 * controller's manifest has (the cell pool's: InPlace for every child).
 */
function optionalEntry(root: string, controller: ControllerDescriptor, type: DeclaredType): Record<string, unknown> {
  const strategies = new Set(manifestChildren(root, controller).map((c) => JSON.stringify(c.updateStrategy ?? null)))
  if (strategies.size !== 1)
    throw new Error(`${controller.rule.controller}: its child types differ in updateStrategy; say which one ${type.kind} takes`)
  const strategy = JSON.parse([...strategies][0] as string) as unknown
  return { apiVersion: type.apiVersion, resource: type.resource, ...(strategy === null ? {} : { updateStrategy: strategy }) }
}

/** The text of `files/controllers.yaml`. */
export function controllersFile(root: string): string {
  const crds = shippedCrds(root)
  const rows = CONTROLLERS.map((c) => {
    const optional = new Set(c.optionalChildren.flatMap((g) => g.types))
    const children = c.rule.types.filter((t) => !optional.has(t))
    const crdNames = [c.parent, ...c.rule.types, ...c.related].flatMap((t) => shippedAs(crds, t)?.name ?? [])
    return {
      name: c.name,
      controller: c.rule.controller,
      needs: needs(crds, children),
      crds: [...new Set(crdNames)].sort(),
      ...(c.admission === undefined
        ? {}
        : {
            admission: {
              path: `/admission/${c.name}`,
              webhook: `${c.parent.resource}.${groupOf(c.parent.apiVersion)}`,
              group: groupOf(c.parent.apiVersion),
              resource: c.parent.resource
            }
          }),
      optional: Object.fromEntries(
        c.optionalChildren.map((g) => [
          g.option,
          { needs: needs(crds, g.types), childResources: g.types.map((t) => optionalEntry(root, c, t)) }
        ])
      )
    }
  })
  const header = [
    '# The controllers as their descriptors (hooks/*/descriptor.ts) describe them to the chart, written',
    '# by `npm run chart` (deploy/chart/controllers.ts). Do not edit.',
    ''
  ].join('\n')
  return header + stringify({ controllers: rows }, { lineWidth: 0 })
}

/** The path of the Cluster API variant of the cell pool controller. */
export function clusterApiManifestPath(root: string): string {
  return join(root, 'metacontroller', 'clusterapi', 'cellpool.yaml')
}

/**
 * The text of `metacontroller/clusterapi/cellpool.yaml`: `metacontroller/cellpool.yaml` with the
 * optional child types appended, and a header saying so.
 */
export function clusterApiManifest(root: string): string {
  const cellpool = CONTROLLERS.find((c) => c.optionalChildren.some((g) => g.option === 'clusterAPI'))
  if (cellpool === undefined) throw new Error('no controller has Cluster API child types')
  const source = readFileSync(join(root, 'metacontroller', `${cellpool.name}.yaml`), 'utf8')
  const doc = parseDocument(source)
  const children = doc.getIn(['spec', 'childResources']) as YAMLSeq
  for (const group of cellpool.optionalChildren.filter((g) => g.option === 'clusterAPI'))
    for (const type of group.types) children.add(doc.createNode(optionalEntry(root, cellpool, type)))
  doc.commentBefore = [
    ` The GPUCellPool controller for a cluster that serves Cluster API: metacontroller/${cellpool.name}.yaml with`,
    ` the Machines of Cluster API cells among its children (docs/clusterapi.md).`,
    ` Apply it in place of metacontroller/${cellpool.name}.yaml, not beside it: both are ${cellpool.rule.controller}.`,
    ` Metacontroller starts no controller one of whose child types the cluster does not serve, so`,
    ` the Machines are not in metacontroller/${cellpool.name}.yaml. Written by \`npm run chart\`; do not edit.`
  ].join('\n')
  return doc.toString({ lineWidth: 0 })
}

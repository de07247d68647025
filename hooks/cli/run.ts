/**
 * `gpuhooks render`: a dry run of the hooks on files. It reads a manifest as a user writes it
 * (the parent, an Instance, a Namespace or a GPUCellPool, with the objects it goes with, such as
 * an Instance's key Secret), and optionally observed children and more related objects, builds the hook request exactly as Metacontroller v2
 * would (type keys `Kind.version` / `Kind.group/version`, object keys `namespace/name` or `name`,
 * every declared child type present, related objects as the customize hook asks for them), calls
 * the pure hook and prints its answer (desired children and status) as YAML.
 *
 * Every problem with the input is named with its file and exits 2 (read.ts bounds the files
 * themselves); nothing is sent anywhere.
 */
import { Value } from '@sinclair/typebox/value'
import { stringify } from 'yaml'
import { objectKey, typeKey } from '../metacontroller/observed.ts'
import type { RelatedResourceRule } from '../metacontroller/schemas.ts'
import { isRecord } from '../k8s/objects.ts'
import { guardAnswer } from '../metacontroller/answer-guard.ts'
import { RENDER_CONTROLLERS, plural, ruleTypeKey, type RenderController } from './controllers.ts'
import { InputError, asStored, readObjects, type KubeObject } from './read.ts'

/** Where the CLI writes. */
export interface RenderIo {
  stdout: (text: string) => void
  stderr: (text: string) => void
}

const USAGE = `usage: gpuhooks render PARENT.yaml [--children FILE]... [--related FILE]... [--finalize] [--now RFC3339]

Prints what the gpuhooks hooks would answer Metacontroller for PARENT (an Instance, a Namespace or
a GPUCellPool): the desired children and the status, as YAML. PARENT.yaml holds that one parent
and may hold the objects it goes with (a key Secret, a join Secret): those are read as related
objects, as if given with --related. --children and --related take
multi-document YAML files (or List objects) of observed objects (a Secret's stringData is read as
the API server stores it, in data); --finalize calls the finalize hook as for a parent being
deleted; --now fixes the clock (default: the current time).`

/** The parsed command line. */
export interface RenderArgs {
  parent: string
  children: string[]
  related: string[]
  finalize: boolean
  now: Date
}

/** Parses the command line (without `render` itself); throws InputError on misuse. */
export function parseArgs(argv: readonly string[], now: Date): RenderArgs {
  const args: RenderArgs = { parent: '', children: [], related: [], finalize: false, now }
  const positional: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    const value = (): string => {
      const next = argv[i + 1]
      if (next === undefined || next === '') throw new InputError(`${arg} needs a value\n${USAGE}`)
      i += 1
      return next
    }
    if (arg === '--children') args.children.push(value())
    else if (arg === '--related') args.related.push(value())
    else if (arg === '--finalize') args.finalize = true
    else if (arg === '--now') {
      const raw = value()
      const parsed = new Date(raw)
      if (Number.isNaN(parsed.getTime())) throw new InputError(`--now ${raw} is not a time (use RFC 3339, e.g. 2026-01-02T03:04:05Z)`)
      args.now = parsed
    } else if (arg === '-h' || arg === '--help') throw new InputError(USAGE)
    else if (arg.startsWith('-')) throw new InputError(`unknown option ${arg}\n${USAGE}`)
    else positional.push(arg)
  }
  if (positional.length !== 1) throw new InputError(`expected one parent file, got ${positional.length}\n${USAGE}`)
  args.parent = positional[0] as string
  return args
}

function keyOf(object: KubeObject): string {
  const ns = object.metadata.namespace
  return objectKey(object.metadata.name as string, typeof ns === 'string' ? ns : undefined)
}

function typeOf(object: KubeObject): string {
  return typeKey(object.apiVersion as string, object.kind as string)
}

function labelsMatch(object: KubeObject, selector: NonNullable<RelatedResourceRule['labelSelector']>): boolean {
  const labels = isRecord(object.metadata.labels) ? object.metadata.labels : {}
  const has = (key: string): boolean => Object.hasOwn(labels, key)
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (!has(key) || labels[key] !== value) return false
  for (const expr of selector.matchExpressions ?? []) {
    const value = has(expr.key) ? labels[expr.key] : undefined
    const values = expr.values ?? []
    if (expr.operator === 'In' && !(typeof value === 'string' && values.includes(value))) return false
    if (expr.operator === 'NotIn' && typeof value === 'string' && values.includes(value)) return false
    if (expr.operator === 'Exists' && value === undefined) return false
    if (expr.operator === 'DoesNotExist' && value !== undefined) return false
  }
  return true
}

/** Whether a related rule (as a customize hook answers it) selects the object. */
export function ruleSelects(rule: RelatedResourceRule, object: KubeObject): boolean {
  if (rule.apiVersion !== object.apiVersion || rule.resource !== plural(object.kind as string)) return false
  if (rule.namespace !== undefined && rule.namespace !== object.metadata.namespace) return false
  if (rule.names !== undefined && !rule.names.includes(object.metadata.name as string)) return false
  if (rule.labelSelector !== undefined && !labelsMatch(object, rule.labelSelector)) return false
  return true
}

function schemaProblem(schema: Parameters<typeof Value.Errors>[0], value: unknown): string | undefined {
  const first = Value.Errors(schema, value).First()
  return first === undefined ? undefined : `${first.path === '' ? '/' : first.path}: ${first.message}`
}

/** The controller whose parent `object` is, if gpuhooks serves its kind. */
function controllerOf(object: KubeObject): RenderController | undefined {
  return RENDER_CONTROLLERS.find((c) => c.apiVersion === object.apiVersion && c.kind === object.kind)
}

/** An object as a message names it: kind, then `namespace/name` or `name`. */
function nameOf(object: KubeObject): string {
  return `${String(object.kind)} ${keyOf(object)}`
}

/**
 * Splits the parent file as a user writes it: the one object of a kind gpuhooks serves is the
 * parent, every other object (an Instance's key Secret, a pool's join Secret) is an observed
 * related object, selected as the customize hook selects `--related` files.
 */
export function splitParentFile(
  file: string,
  objects: readonly KubeObject[]
): { parent: KubeObject; row: RenderController; rest: KubeObject[] } {
  const served = objects.filter((o) => controllerOf(o) !== undefined)
  const known = RENDER_CONTROLLERS.map((c) => `${c.kind} (${c.apiVersion})`).join(', ')
  if (served.length > 1)
    throw new InputError(
      `${file}: expected one parent object, found ${served.length} of kinds gpuhooks renders: ${served.map(nameOf).join(', ')}; render them one file each`
    )
  const parent = served[0]
  if (parent === undefined) {
    if (objects.length === 0) throw new InputError(`${file}: no object in it; expected a parent: ${known}`)
    const [only] = objects
    if (objects.length === 1 && only !== undefined)
      throw new InputError(`${file}: ${String(only.kind)} (${String(only.apiVersion)}) is not a parent gpuhooks renders; known: ${known}`)
    throw new InputError(
      `${file}: none of its ${objects.length} objects is a parent gpuhooks renders (${objects.map(nameOf).join(', ')}); known: ${known}`
    )
  }
  return { parent, row: controllerOf(parent) as RenderController, rest: objects.filter((o) => o !== parent) }
}

/** Builds the v2 hook request for the parent, as Metacontroller would send it, and its controller's row. */
export function buildRequest(args: RenderArgs, io: Pick<RenderIo, 'stderr'>): { row: RenderController; request: Record<string, unknown> } {
  const { parent, row, rest } = splitParentFile(args.parent, readObjects(args.parent))
  if (args.finalize && row.finalize === undefined) throw new InputError(`--finalize: the ${row.kind} controller has no finalize hook`)

  const customizeRequest = { controller: { metadata: { name: row.name } }, parent }
  const customizeProblem = schemaProblem(row.customizeSchema, customizeRequest)
  if (customizeProblem !== undefined) throw new InputError(`${args.parent}: the ${row.kind} cannot be read: parent${customizeProblem}`)
  const rules = row.customize(customizeRequest as never, args.now).relatedResources

  const children = new Map<string, Record<string, KubeObject>>(row.childTypes.map((t) => [t, {}]))
  for (const file of args.children) {
    for (const child of readObjects(file).map(asStored)) {
      const map = children.get(typeOf(child))
      if (map === undefined)
        throw new InputError(
          `${file}: ${typeOf(child)} ${keyOf(child)} is not a child type of the ${row.kind} controller (${row.childTypes.join(', ')})`
        )
      map[keyOf(child)] = child
    }
  }
  const related = new Map<string, Record<string, KubeObject>>()
  for (const rule of rules) {
    const key = ruleTypeKey(rule.apiVersion, rule.resource)
    if (key !== undefined && !related.has(key)) related.set(key, {})
  }
  const relatedFiles = [{ file: args.parent, objects: rest }, ...args.related.map((file) => ({ file, objects: readObjects(file) }))]
  for (const { file, objects } of relatedFiles) {
    for (const object of objects.map(asStored)) {
      if (!rules.some((rule) => ruleSelects(rule, object))) {
        io.stderr(`gpuhooks render: ${file}: ${typeOf(object)} ${keyOf(object)} ignored: the customize hook does not relate it\n`)
        continue
      }
      const type = typeOf(object)
      const map = related.get(type) ?? {}
      related.set(type, map)
      map[keyOf(object)] = object
    }
  }

  const observed = Object.fromEntries(children)
  const request =
    row.shape === 'composite'
      ? {
          controller: customizeRequest.controller,
          parent,
          children: observed,
          related: Object.fromEntries(related),
          finalizing: args.finalize
        }
      : {
          controller: customizeRequest.controller,
          object: parent,
          attachments: observed,
          related: Object.fromEntries(related),
          finalizing: args.finalize
        }
  const problem = schemaProblem(row.syncSchema, request)
  if (problem !== undefined)
    throw new InputError(
      `the hook request built from ${[args.parent, ...args.children, ...args.related].join(', ')} is not valid at ${problem}`
    )
  return { row, request }
}

/** Builds the request and calls the hook (finalize with `--finalize`); returns its answer. */
export function render(args: RenderArgs, io: Pick<RenderIo, 'stderr'>): unknown {
  const { row, request } = buildRequest(args, io)
  const hook = args.finalize && row.finalize !== undefined ? row.finalize : row.sync
  // As the service does: an answer holding what the controller may not create is a bug, never printed.
  return guardAnswer(`render ${row.name}`, row.rule, request, hook(request as never, args.now))
}

/** The CLI: returns the exit code (0 done, 2 bad input or usage). */
export function runRender(argv: readonly string[], io: RenderIo, now: Date = new Date()): number {
  try {
    const answer = render(parseArgs(argv, now), io)
    io.stdout(stringify(answer, { lineWidth: 0, aliasDuplicateObjects: false, version: '1.1' }))
    return 0
  } catch (err) {
    if (!(err instanceof InputError)) throw err
    io.stderr(`gpuhooks render: ${err.message}\n`)
    return 2
  }
}

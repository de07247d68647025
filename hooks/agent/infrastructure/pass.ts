/**
 * One pass for one CellInfrastructure: serve check, read, decide (decide.ts), carry out,
 * write the status (docs/cellpool.md, "Cluster API cells").
 *
 * Served only when its controller owner reference is a GPUCellPool whose uid is `spec.poolUID`
 * (the check of a CellNodeSet, kubeconfig.ts `checkPoolOwner`). The spec is read all or nothing:
 * one that fails its schema is not acted on at all, and the pass names the failing field.
 */
import { Value } from '@sinclair/typebox/value'
import {
  CellInfrastructureSpecSchema,
  CellMachineStatusSchema,
  CLUSTER_API_VERSION,
  BOOTSTRAP_CONFIG_VERSION,
  KUBESWIFT_MACHINE_API_VERSION,
  KUBESWIFT_MACHINE_KIND
} from '../../api/cellinfrastructure.ts'
import { asText, isRecord } from '../../k8s/objects.ts'
import { decideInfrastructure, templateKey, templateKindOf, type InfrastructureInput } from './decide.ts'
import { checkPoolOwner } from '../workload/kubeconfig.ts'
import { errorText } from '../workload/reachability.ts'
import type { ObjectsApi } from '../model/apis.ts'

/** What a pass did, for logs and metrics. */
export interface InfrastructurePassReport {
  served: boolean
  notServed?: string
  created: string[]
  released: string[]
  errors: { reason: string; message: string }[]
  statusWritten: boolean
}

/** Runs one pass. Never throws for anything an object or a cluster can do. */
export async function runInfrastructurePass(object: unknown, api: ObjectsApi): Promise<InfrastructurePassReport> {
  const report: InfrastructurePassReport = { served: false, created: [], released: [], errors: [], statusWritten: false }
  const input = readInfrastructure(object)
  if (typeof input === 'string') {
    report.notServed = input
    return report
  }
  const { namespace, name } = input.metadata
  const guarded = async <T>(reason: string, call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call()
    } catch (error) {
      report.errors.push({ reason, message: errorText(error) })
      return undefined
    }
  }
  const owner = await checkPoolOwner(object, namespace, (ns, pool) => api.getPool(ns, pool), report)
  if (owner === undefined) return report
  report.served = true

  const machines = new Map<string, unknown>()
  const kubeSwiftMachines = new Map<string, unknown>()
  const bootstrapConfigs = new Map<string, unknown>()
  const templates = new Map<string, unknown>()
  for (const entry of input.spec.machines ?? []) {
    const read = async (apiVersion: string, kind: string, objectName: string): Promise<unknown> =>
      guarded('InfrastructureRead', () => api.get(apiVersion, kind, namespace, objectName))
    const machine = await read(CLUSTER_API_VERSION, 'Machine', entry.name)
    if (machine === undefined) continue
    machines.set(entry.name, machine)
    const ksm = await read(KUBESWIFT_MACHINE_API_VERSION, KUBESWIFT_MACHINE_KIND, entry.name)
    if (ksm !== undefined) kubeSwiftMachines.set(entry.name, ksm)
    const wanted = entry.bootstrapConfig
    if (wanted === undefined) continue
    const apiVersion = `${wanted.apiGroup}/${BOOTSTRAP_CONFIG_VERSION}`
    const config = await read(apiVersion, wanted.kind, entry.name)
    if (config !== undefined) {
      bootstrapConfigs.set(entry.name, config)
      continue
    }
    const templateKind = templateKindOf(wanted.kind)
    const key = templateKey(wanted.apiGroup, templateKind, wanted.templateName)
    if (!templates.has(key)) {
      const template = await read(apiVersion, templateKind, wanted.templateName)
      if (template !== undefined) templates.set(key, template)
    }
  }
  if (report.errors.length > 0) return report

  const decision = decideInfrastructure(input, { machines, kubeSwiftMachines, bootstrapConfigs, templates })
  for (const action of decision.actions) {
    if (action.type === 'create') {
      const done = await guarded('InfrastructureCreate', async () => {
        await api.create(action.object)
        return true
      })
      if (done === true) report.created.push(`${asText(action.object.kind) ?? ''} ${action.machine}`)
    } else {
      const done = await guarded('MachineRelease', async () => {
        await api.patch(CLUSTER_API_VERSION, 'Machine', namespace, action.machine, action.patch)
        return true
      })
      if (done === true) report.released.push(action.machine)
    }
  }
  if (decision.writeStatus && report.errors.length === 0) {
    const resourceVersion = isRecord(object) && isRecord(object.metadata) ? (asText(object.metadata.resourceVersion) ?? '') : ''
    const written = await guarded('StatusWrite', async () => {
      await api.replaceStatus(namespace, name, resourceVersion, decision.status)
      return true
    })
    report.statusWritten = written === true
  }
  return report
}

/** The CellInfrastructure as the core reads it, or why it is not read. */
export function readInfrastructure(object: unknown): InfrastructureInput | string {
  if (!isRecord(object) || !isRecord(object.metadata)) return 'not a CellInfrastructure'
  const { name, namespace, generation } = object.metadata
  if (typeof name !== 'string' || typeof namespace !== 'string') return 'a CellInfrastructure without a name and namespace'
  if (!Value.Check(CellInfrastructureSpecSchema, object.spec)) {
    const first = Value.Errors(CellInfrastructureSpecSchema, object.spec).First()
    return `spec${first?.path.replaceAll('/', '.') ?? ''}: ${first?.message ?? 'not a CellInfrastructure spec'}; nothing is done for it`
  }
  const status = isRecord(object.status) ? object.status : {}
  const rows = Array.isArray(status.machines) ? status.machines.filter((row) => Value.Check(CellMachineStatusSchema, row)) : undefined
  return {
    metadata: { name, namespace, ...(typeof generation === 'number' ? { generation } : {}) },
    spec: structuredClone(object.spec),
    status: {
      ...(typeof status.observedGeneration === 'number' ? { observedGeneration: status.observedGeneration } : {}),
      ...(rows !== undefined ? { machines: rows } : {})
    }
  }
}

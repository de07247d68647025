/**
 * The requests of the GPUCellPool controller, one schema and one type each: what the routes
 * validate a body against and what the hooks take.
 */
import type { Static } from '@sinclair/typebox'
import { OpenSpecParentSchema, compositeRequestSchema, customizeRequestSchema } from '../../metacontroller/schemas.ts'

/**
 * A GPUCellPool as a hook reads it. The spec stays open: a wrong spec is reported in status, not
 * refused with a 400 (README, "Hook endpoints").
 */
export const CellPoolParentSchema = OpenSpecParentSchema

/** Sync and finalize request of the GPUCellPool controller. */
export const CellPoolSyncRequestSchema = compositeRequestSchema(CellPoolParentSchema)
export type CellPoolSyncRequest = Static<typeof CellPoolSyncRequestSchema>

/** Customize request of the cellpool controller: the pool as sync reads it (a namespace and an open spec). */
export const CellPoolCustomizeRequestSchema = customizeRequestSchema(CellPoolParentSchema)
export type CellPoolCustomizeRequest = Static<typeof CellPoolCustomizeRequestSchema>

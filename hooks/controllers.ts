/**
 * Every controller gpuhooks serves, each as its descriptor (hooks/metacontroller/descriptor.ts),
 * in the order the routes, the render CLI and the chart list them. The package's main export.
 */
import type { ControllerDescriptor } from './metacontroller/descriptor.ts'
import { instance } from './instance/descriptor.ts'
import { isolation } from './isolation/descriptor.ts'
import { cellpool } from './cellpool/descriptor.ts'

/** The controllers as a list: Instance, isolation, GPUCellPool. */
export const CONTROLLERS: readonly ControllerDescriptor[] = [instance, isolation, cellpool]

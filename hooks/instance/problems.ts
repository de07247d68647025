/**
 * What is wrong with an Instance's spec, as the checks report it and status and admission say it:
 * the field, a CamelCase reason (the condition's), and a sentence naming the value and the rule.
 */

/** One problem with a spec: the field, a CamelCase reason for the condition, and a message. */
export interface SpecProblem {
  field: string
  reason: string
  message: string
}

/** The reason of a problem no more precise reason fits. */
export const INVALID_SPEC = 'InvalidSpec'
/** The reason when `spec.type` names no InstanceType. */
export const INSTANCE_TYPE_NOT_FOUND = 'InstanceTypeNotFound'
/** The reason when the InstanceType `spec.type` names is stored in a shape the hooks cannot use. */
export const INSTANCE_TYPE_INVALID = 'InstanceTypeInvalid'
/** The reason when a Setting the Instance needs is stored in a shape the hooks cannot use. */
export const SETTING_INVALID = 'SettingInvalid'
/** The reason when the InstanceType's `spec.access` does not admit the Instance's namespace. */
export const TYPE_NOT_PERMITTED = 'TypeNotPermitted'
/** The reason when the InstanceType cannot serve the accelerator request. */
export const ACCELERATOR_NOT_OFFERED = 'AcceleratorNotOffered'

/** A problem with reason `InvalidSpec`. */
export function invalid(field: string, message: string): SpecProblem {
  return { field, reason: INVALID_SPEC, message }
}

/** A problem with reason `AcceleratorNotOffered`. */
export function notOffered(field: string, message: string): SpecProblem {
  return { field, reason: ACCELERATOR_NOT_OFFERED, message }
}

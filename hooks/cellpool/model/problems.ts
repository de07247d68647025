/**
 * What is wrong, as data: a problem of a pool spec (the rules, rules/validate.ts), and what keeps a
 * pool from creating cells (plan/blocking.ts). Sentences are written where the problem is found
 * and joined where the answer is rendered.
 */

/** One problem of a pool spec: the field at fault and a sentence naming the rule. */
export interface PoolProblem {
  field: string
  message: string
}

/** Why the pool creates no cell and keeps every child as it is (plan/blocking.ts). */
export interface Blocking {
  reason: 'SpecInvalid' | 'ProvisionerChanged' | 'JoinSecretMissing' | 'BootstrapTemplateInvalid' | 'CellNodeSetTooLarge'
  message: string
}

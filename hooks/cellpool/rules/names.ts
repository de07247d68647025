/**
 * The Kubernetes name grammar the pool's admission rules check (the rules of the API server's
 * validation of names, label keys and values, and Secret keys), each with the sentence a problem
 * says it in.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/

/** A Secret name: a DNS subdomain of at most 253 characters. */
export function isSecretName(name: string): boolean {
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name)
}

/** A Secret (or ConfigMap) data key: letters, digits, `-`, `_` and `.`, at most 253. */
export function isSecretKey(key: string): boolean {
  return key.length > 0 && key.length <= 253 && SECRET_KEY.test(key)
}

/** What a DNS label is, as a problem says it. */
export const DNS_LABEL_RULE = 'at most 63 lower-case letters, digits and -, starting and ending with a letter or digit'

/** A DNS-1123 label of at most 63 characters. */
export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS1123_LABEL.test(value)
}

/** A DNS-1123 label of any length (the caller bounds it). */
export function matchesDnsLabel(value: string): boolean {
  return DNS1123_LABEL.test(value)
}

/** A label value: empty, or at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value)
}

/** A qualified name (label, annotation or taint key): an optional DNS subdomain prefix and `/`, then a name of at most 63. */
export function isQualifiedName(key: string): boolean {
  const parts = key.split('/')
  if (parts.length > 2) return false
  const name = parts.length === 2 ? parts[1] : parts[0]
  const prefix = parts.length === 2 ? parts[0] : undefined
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return false
  return name !== undefined && name.length <= 63 && QUALIFIED_NAME.test(name)
}

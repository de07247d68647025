/**
 * The Kubernetes name grammar, in one place: DNS labels and subdomains (RFC 1123), DNS-1035
 * labels, IANA service names, label keys and values, Secret keys, as the API server validates
 * them. The patterns as strings, for the CRD schemas (hooks/api/) and the sentences that explain
 * them; the checks, for the hooks' and the agent's own rules.
 */

/** A DNS label (RFC 1123): lower-case letters, digits and -, starting and ending with a letter or digit. */
export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'

/** A DNS subdomain (RFC 1123), the rule of a Node, Secret or ConfigMap name (at most 253 characters). */
export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'

/** A DNS-1035 label: a DNS label that starts with a letter (a Service name). */
export const DNS1035_LABEL_PATTERN = '^[a-z]([-a-z0-9]*[a-z0-9])?$'

const DNS1123_LABEL = new RegExp(DNS_LABEL_PATTERN)
const DNS1123_SUBDOMAIN = new RegExp(DNS_SUBDOMAIN_PATTERN)
const DNS1035_LABEL = new RegExp(DNS1035_LABEL_PATTERN)
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/

/** A Secret name: a DNS subdomain of at most 253 characters. */
export function isSecretName(name: string): boolean {
  return isDnsSubdomain(name)
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

/** A DNS subdomain of at most 253 characters. */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS1123_SUBDOMAIN.test(value)
}

/** A DNS-1035 label of any length (the caller bounds it). */
export function matchesDns1035Label(value: string): boolean {
  return DNS1035_LABEL.test(value)
}

/** An IANA service name, as a port name must be (the length is the schema's): a DNS label with a letter and no `--`. */
export function isIanaServiceName(name: string): boolean {
  return DNS1123_LABEL.test(name) && /[a-z]/.test(name) && !name.includes('--')
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
  if (prefix !== undefined && (prefix.length === 0 || !isDnsSubdomain(prefix))) return false
  return name !== undefined && name.length <= 63 && QUALIFIED_NAME.test(name)
}

/**
 * Setting (`gpustack.ai/v1alpha1`, cluster-scoped): one cluster-wide knob per object, named after
 * the setting, its value the top-level string `value`.
 *
 * Editing a Setting with kubectl is the Settings API: every hook that relates the Setting is
 * re-synced by Metacontroller when it changes.
 */
import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import { describe } from '../k8s/schema-messages.ts'
import { goTrimSpace } from '../k8s/go-strings.ts'
import { DNS_SUBDOMAIN_PATTERN, isDnsSubdomain } from '../k8s/names.ts'
import { CustomResource, cel } from './kit.ts'

/** API group and version of Setting. */
export const SETTING_API_VERSION = 'gpustack.ai/v1alpha1'
/** Type key of Settings in a v2 hook request. */
export const SETTING_TYPE_KEY = 'Setting.gpustack.ai/v1alpha1'

/** Comma-separated pod CIDRs that turn on tenant isolation; blank (the default) leaves it off. */
export const ISOLATION_POD_CIDRS_SETTING = 'instance-isolation-pod-cidrs'
/** Image of the Instance SSH sidecar. */
export const SSH_SERVER_IMAGE_SETTING = 'instance-ssh-server-image'
/**
 * The address users reach Instances at (a load balancer or NAT in front of the nodes): an IP or
 * a DNS name; blank (the default) means each Pod's host IP.
 */
export const ACCESS_ADDRESS_SETTING = 'instance-access-address'

/**
 * The SSH sidecar image used when the Setting is absent or blank: the image this project
 * publishes from `deploy/sshd/`.
 */
export const DEFAULT_SSH_SERVER_IMAGE = 'ghcr.io/gpustack/gpuhooks-sshd:0.1.0'

/**
 * CEL for `instance-isolation-pod-cidrs`: every comma-separated entry, trimmed, must be a
 * canonical CIDR (host bits zero, as `cidr(c).masked()` prints it) with a prefix above 0. A blank
 * value is allowed: it turns isolation off. `isCIDR` guards `cidr()`, which errors on bad input.
 */
const podCidrsRule =
  "self.metadata.name != 'instance-isolation-pod-cidrs' || !has(self.value) || self.value.trim() == '' || " +
  "self.value.split(',').all(c, isCIDR(c.trim()) && cidr(c.trim()).prefixLength() > 0 && " +
  'string(cidr(c.trim()).masked()) == c.trim())'

/**
 * CEL for `instance-access-address`: blank, or (trimmed) an IP address as the API server's `isIP`
 * reads it (no zone, no IPv4-mapped IPv6, no brackets), or a lower-case DNS name that is not all
 * digits and dots (`01.2.3.4` is no IP address, and a resolver might still read it as one).
 */
const accessAddressRule =
  "self.metadata.name != 'instance-access-address' || !has(self.value) || self.value.trim() == '' || " +
  'isIP(self.value.trim()) || (size(self.value.trim()) <= 253 && ' +
  `self.value.trim().matches('${DNS_SUBDOMAIN_PATTERN}') && !self.value.trim().matches('^[0-9.]+$') && ` +
  "self.value.trim().split('.').all(l, size(l) <= 63))"

/** Setting: `metadata.name` is the setting, `value` its value. */
export const SettingSchema = CustomResource(
  {
    apiVersion: Type.Optional(Type.String({ description: 'gpustack.ai/v1alpha1' })),
    kind: Type.Optional(Type.String({ description: 'Setting' })),
    value: Type.Optional(
      Type.String({
        maxLength: 4096,
        description:
          'The value of the setting named by metadata.name. instance-isolation-pod-cidrs: comma-separated ' +
          'IPv4/IPv6 pod CIDRs in canonical form (10.244.0.0/16,fd00:10:244::/56); blank turns tenant ' +
          'isolation off. instance-ssh-server-image: image of the Instance SSH sidecar; blank uses the ' +
          'published default. Running Instances pick a changed value up at their next start. ' +
          'instance-access-address: the IP address or DNS name users reach Instances at (a load balancer or NAT in ' +
          "front of the nodes), shown in each running Instance's status.connect; blank uses the Pod's host IP."
      })
    )
  },
  {
    description: 'A cluster-wide gpuhooks setting. One object per setting, named after it; its value is the ' + 'top-level field value.',
    ...cel(
      {
        rule: podCidrsRule,
        message:
          'value of instance-isolation-pod-cidrs must be comma-separated canonical CIDRs with a prefix ' +
          'length above 0 and host bits zero, e.g. 10.244.0.0/16,fd00:10:244::/56',
        fieldPath: '.value'
      },
      {
        rule: accessAddressRule,
        message:
          'value of instance-access-address must be an IP address (IPv6 without brackets, no zone) or a lower-case DNS name ' +
          '(labels of letters, digits and -, at most 253 characters), e.g. 203.0.113.10 or gpu.example.com',
        fieldPath: '.value'
      }
    )
  }
)
export type Setting = Static<typeof SettingSchema>

/** The value of a Setting, trimmed; undefined when the object is absent or the value blank. */
export function settingValue(setting: { value?: unknown } | undefined): string | undefined {
  const value = typeof setting?.value === 'string' ? setting.value.trim() : ''
  return value === '' ? undefined : value
}

/** The Setting `instance-access-address` as read: an address, a problem, or neither (unset or blank). */
export interface AccessAddress {
  address?: string
  problem?: string
}

/**
 * What the hooks make of a stored `instance-access-address` value: the address, or why it cannot
 * be used (a value stored before the CRD's rule, or written around it). Mirrors the CEL rule:
 * an IP address as Go's `netip.ParseAddr` takes it without a zone or an IPv4-mapped IPv6 form, or
 * a lower-case DNS name.
 */
export function readAccessAddress(value: unknown): AccessAddress {
  if (value === undefined) return {}
  if (typeof value !== 'string') return { problem: `Setting ${ACCESS_ADDRESS_SETTING} value must be a string, not ${describe(value)}` }
  const address = goTrimSpace(value)
  if (address === '') return {}
  if (isAccessIP(address) || isDnsName(address)) return { address }
  return { problem: `Setting ${ACCESS_ADDRESS_SETTING} value is neither an IP address nor a lower-case DNS name` }
}

/** True for an IPv4 or IPv6 address without a zone and not IPv4-mapped (the API server's `isIP`). */
export function isAccessIP(value: string): boolean {
  const family = isIP(value)
  if (family === 4) return true
  if (family !== 6 || value.includes('%')) return false
  // The URL parser writes an IPv6 address in canonical form: an IPv4-mapped one is ::ffff:x:y.
  try {
    return !/^\[::ffff:[0-9a-f]{1,4}:[0-9a-f]{1,4}\]$/.test(new URL(`http://[${value}]/`).hostname)
  } catch {
    return false
  }
}

function isDnsName(value: string): boolean {
  return isDnsSubdomain(value) && !/^[0-9.]+$/.test(value) && value.split('.').every((l) => l.length <= 63)
}

/**
 * Setting (`gpustack.ai/v1alpha1`, cluster-scoped): one cluster-wide knob per object, named after
 * the setting, its value the top-level string `value`.
 *
 * Editing a Setting with kubectl is the Settings API: every hook that relates the Setting is
 * re-synced by Metacontroller when it changes.
 */
import { Type, type Static } from '@sinclair/typebox'
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
          'published default. Running Instances pick a changed value up at their next start.'
      })
    )
  },
  {
    description: 'A cluster-wide gpuhooks setting. One object per setting, named after it; its value is the ' + 'top-level field value.',
    ...cel({
      rule: podCidrsRule,
      message:
        'value of instance-isolation-pod-cidrs must be comma-separated canonical CIDRs with a prefix ' +
        'length above 0 and host bits zero, e.g. 10.244.0.0/16,fd00:10:244::/56',
      fieldPath: '.value'
    })
  }
)
export type Setting = Static<typeof SettingSchema>

/** The value of a Setting, trimmed; undefined when the object is absent or the value blank. */
export function settingValue(setting: { value?: unknown } | undefined): string | undefined {
  const value = typeof setting?.value === 'string' ? setting.value.trim() : ''
  return value === '' ? undefined : value
}

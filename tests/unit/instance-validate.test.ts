import t from 'tap'
import { instanceNameProblems, specProblems, typeProblems, withDefaults } from '../../hooks/instance/validate.ts'
import type { SpecProblem } from '../../hooks/instance/problems.ts'
import type { ResolvedSpec } from '../../hooks/instance/validate.ts'
import type { InstanceSpec } from '../../hooks/api/instance.ts'
import type { InstanceTypeSpec } from '../../hooks/api/instancetype.ts'

const base = { type: 'a100', image: 'pytorch:2' }
/** The base spec listing `ports`. */
const withPorts = (...ports: Array<{ port: number; protocol?: 'TCP' | 'UDP'; name?: string }>) => ({ ...base, ports })
const bad = (field: string, message: string): SpecProblem => ({ field, reason: 'InvalidSpec', message })
const A = 'spec.resources.accelerator'

const specCases: Array<{ name: string; given: unknown; expected: SpecProblem[] }> = [
  { name: 'a minimal spec has no problem', given: base, expected: [] },
  { name: 'a spec that is not an object is one problem', given: 'pytorch', expected: [bad('spec', 'spec must be an object, not pytorch')] },
  {
    name: 'schema problems name the field, the value and the rule, all of them',
    given: { image: 3, imagePullPolicy: 'Sometimes', ports: [{ port: 0 }], resources: { cpu: 'lots' } },
    expected: [
      bad('spec.type', 'spec.type is required'),
      bad('spec.image', 'spec.image 3 is invalid: expected string'),
      bad('spec.imagePullPolicy', 'spec.imagePullPolicy Sometimes is not one of Always, IfNotPresent, Never'),
      bad('spec.ports[0].port', 'spec.ports[0].port 0 is below the minimum 1'),
      bad('spec.resources.cpu', 'spec.resources.cpu lots is not a quantity (such as 500m, 4Gi or 2)')
    ]
  },
  {
    name: 'the workspace mountPath must be absolute',
    given: { ...base, workspace: { mountPath: 'data' } },
    expected: [bad('spec.workspace.mountPath', 'spec.workspace.mountPath data must be an absolute path (start with /)')]
  },
  {
    name: 'a type name longer than a label value is refused',
    given: { ...base, type: 't'.repeat(64) },
    expected: [bad('spec.type', `spec.type ${'t'.repeat(64)} is longer than 63 characters`)]
  },
  {
    name: 'the same port number with two protocols is refused, because the Service merges ports by number',
    given: withPorts({ port: 8080, protocol: 'TCP' }, { port: 8080, protocol: 'UDP' }),
    expected: [
      bad(
        'spec.ports[1]',
        'spec.ports[1]: port 8080/UDP shares port 8080 with 8080/TCP; the Service merges ports by number, use distinct port numbers'
      )
    ]
  },
  {
    name: 'the same port and protocol twice is refused, absent protocol meaning TCP',
    given: withPorts({ port: 80 }, { port: 80, protocol: 'TCP' }),
    expected: [bad('spec.ports[1]', 'spec.ports[1]: port 80/TCP is listed twice (also spec.ports[0]); list each port once')]
  },
  {
    name: 'port names must be unique',
    given: withPorts({ port: 80, name: 'web' }, { port: 81, name: 'web' }),
    expected: [bad('spec.ports[1].name', 'spec.ports[1].name web is also the name of spec.ports[0]; names must be unique')]
  },
  {
    name: 'the port name ssh is reserved',
    given: withPorts({ port: 2222, name: 'ssh' }),
    expected: [bad('spec.ports[0].name', 'spec.ports[0].name ssh is reserved for the SSH sidecar; choose another name')]
  },
  {
    name: 'a port name must be an IANA service name',
    given: withPorts({ port: 80, name: 'my--web' }, { port: 81, name: '8080' }),
    expected: [
      bad(
        'spec.ports[0].name',
        'spec.ports[0].name my--web is not an IANA service name: lower-case letters, digits and -, with a letter, no -- and no - at either end'
      ),
      bad(
        'spec.ports[1].name',
        'spec.ports[1].name 8080 is not an IANA service name: lower-case letters, digits and -, with a letter, no -- and no - at either end'
      )
    ]
  },
  {
    name: 'with SSH on, port 22 may be listed only as 22/TCP',
    given: { ...withPorts({ port: 22, protocol: 'TCP' }, { port: 22, protocol: 'UDP' }), sshPublicKey: { name: 'keys' } },
    expected: [
      bad(
        'spec.ports[1]',
        'spec.ports[1]: port 22/UDP shares port 22 with 22/TCP; the Service merges ports by number, use distinct port numbers'
      ),
      bad(
        'spec.ports[1]',
        'spec.ports[1]: port 22/UDP is not allowed with spec.sshPublicKey set; port 22 is the SSH port, only 22/TCP may be listed'
      )
    ]
  },
  { name: 'without SSH, 22/UDP is an ordinary port', given: withPorts({ port: 22, protocol: 'UDP' }), expected: [] },
  {
    name: 'workspace size and claimName are exclusive',
    given: { ...base, workspace: { size: '10Gi', claimName: 'data' } },
    expected: [
      bad(
        'spec.workspace',
        'spec.workspace: size and claimName are exclusive; set size for an ephemeral workspace or claimName for an existing claim'
      )
    ]
  },
  {
    name: 'env names must be unique, and value and valueFrom are exclusive',
    given: {
      ...base,
      env: [
        { name: 'A', value: '1' },
        { name: 'A', value: '2', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }
      ]
    },
    expected: [
      bad('spec.env[1].name', 'spec.env[1].name A is also the name of spec.env[0]; names must be unique'),
      bad('spec.env[1]', 'spec.env[1] (A): value and valueFrom are exclusive; set one')
    ]
  },
  {
    name: 'imagePullSecrets names must be unique',
    given: { ...base, imagePullSecrets: [{ name: 'reg' }, { name: 'reg' }] },
    expected: [
      bad(
        'spec.imagePullSecrets[1].name',
        'spec.imagePullSecrets[1].name reg is also the name of spec.imagePullSecrets[0]; names must be unique'
      )
    ]
  },
  {
    name: 'memoryMiB together with memoryPercentage is refused',
    given: { ...base, resources: { accelerator: { family: 'Sliced', memoryMiB: 1024, memoryPercentage: 10 } } },
    expected: [bad(`${A}.memoryMiB`, `${A}.memoryMiB and ${A}.memoryPercentage are exclusive; set one`)]
  },
  {
    name: 'count 0 means CPU only: no other accelerator field may be set',
    given: { ...base, resources: { accelerator: { count: 0, family: 'Partitioned', profile: '1g.10gb' } } },
    expected: [bad(`${A}.count`, `${A}.count 0 means a CPU-only workspace; remove family, profile, or set count to 1 or more`)]
  },
  { name: 'count 0 alone is a CPU-only workspace', given: { ...base, resources: { accelerator: { count: 0 } } }, expected: [] },
  {
    name: 'Sliced takes count 1 and needs memory',
    given: { ...base, resources: { accelerator: { family: 'Sliced', count: 2 } } },
    expected: [
      bad(`${A}.count`, `${A}.count 2 is not allowed for family Sliced; Sliced and Partitioned take count 1`),
      bad(A, `${A}: family Sliced needs memoryMiB or memoryPercentage`)
    ]
  },
  {
    name: 'Partitioned takes count 1 and needs a profile',
    given: { ...base, resources: { accelerator: { family: 'Partitioned', count: 4 } } },
    expected: [
      bad(`${A}.count`, `${A}.count 4 is not allowed for family Partitioned; Sliced and Partitioned take count 1`),
      bad(`${A}.profile`, `${A}.profile is required for family Partitioned`)
    ]
  },
  {
    name: 'Sliced fields and profile belong to their families only, absent family meaning Whole',
    given: { ...base, resources: { accelerator: { coresPercentage: 50, profile: '1g.10gb' } } },
    expected: [
      bad(`${A}.coresPercentage`, `${A}.coresPercentage applies to the Sliced family only; family is Whole`),
      bad(`${A}.profile`, `${A}.profile 1g.10gb applies to the Partitioned family only; family is Whole`)
    ]
  },
  // What the API server refuses in the Pod the hook renders (Kubernetes v1.37 pkg/apis/core/validation).
  {
    name: 'negative quantities are refused, as the API server refuses them in a Pod',
    given: { ...base, resources: { cpu: '-1', memory: -5 }, workspace: { size: '-0.5Gi' } },
    expected: [
      bad('spec.resources.cpu', 'spec.resources.cpu -1 is negative; the API server takes no negative quantity'),
      bad('spec.resources.memory', 'spec.resources.memory -5 is negative; the API server takes no negative quantity'),
      bad('spec.workspace.size', 'spec.workspace.size -0.5Gi is negative; the API server takes no negative quantity')
    ]
  },
  {
    name: 'zero, minus zero and positive quantities are accepted',
    given: { ...base, resources: { cpu: '0', memory: '-0Gi' }, workspace: { size: '+1Ti' } },
    expected: []
  },
  {
    name: 'an env name is printable ASCII other than =, as the relaxed rule of Kubernetes 1.34 and later has it',
    given: {
      ...base,
      env: [
        { name: 'A=B', value: '1' },
        { name: 'TAB\tNAME', value: '2' },
        { name: 'my.var-1 x', value: 'ok' }
      ]
    },
    expected: [
      bad('spec.env[0].name', 'spec.env[0].name A=B is not an environment variable name: printable ASCII characters other than ='),
      bad('spec.env[1].name', 'spec.env[1].name TAB\tNAME is not an environment variable name: printable ASCII characters other than =')
    ]
  },
  {
    name: 'valueFrom takes exactly one known source',
    given: {
      ...base,
      env: [
        { name: 'NONE', valueFrom: {} },
        { name: 'UNKNOWN', valueFrom: { vaultRef: { path: 'x' } } },
        { name: 'TWO', valueFrom: { secretKeyRef: { name: 's', key: 'k' }, configMapKeyRef: { name: 'c', key: 'k' } } }
      ]
    },
    expected: [
      bad(
        'spec.env[0].valueFrom',
        'spec.env[0].valueFrom sets no source; set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef'
      ),
      bad(
        'spec.env[1].valueFrom.vaultRef',
        'spec.env[1].valueFrom.vaultRef is not a source; valueFrom takes one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef'
      ),
      bad(
        'spec.env[1].valueFrom',
        'spec.env[1].valueFrom sets no source; set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef'
      ),
      bad(
        'spec.env[2].valueFrom',
        'spec.env[2].valueFrom sets 2 sources (configMapKeyRef, secretKeyRef); set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef'
      )
    ]
  },
  {
    name: 'each source is checked as the API server checks it',
    given: {
      ...base,
      env: [
        { name: 'S', valueFrom: { secretKeyRef: { name: 'Not_A_Name', key: 'a/b' } } },
        { name: 'F', valueFrom: { fieldRef: { fieldPath: 'spec.containers' } } },
        { name: 'V', valueFrom: { fieldRef: { apiVersion: 'v2', fieldPath: "metadata.labels['team']" } } },
        { name: 'R', valueFrom: { resourceFieldRef: { resource: 'limits.nvidia.com/gpu' } } },
        { name: 'OK', valueFrom: { resourceFieldRef: { resource: 'requests.hugepages-2Mi' } } },
        { name: 'OK2', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } }
      ]
    },
    expected: [
      bad(
        'spec.env[0].valueFrom.secretKeyRef.name',
        'spec.env[0].valueFrom.secretKeyRef.name Not_A_Name is not a DNS subdomain (lower-case letters, digits, - and ., each part starting and ending with a letter or digit)'
      ),
      bad(
        'spec.env[0].valueFrom.secretKeyRef.key',
        'spec.env[0].valueFrom.secretKeyRef.key a/b is not a ConfigMap or Secret key (letters, digits, -, _ and .)'
      ),
      bad(
        'spec.env[1].valueFrom.fieldRef.fieldPath',
        "spec.env[1].valueFrom.fieldRef.fieldPath spec.containers is not a field the downward API offers: metadata.name, metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP, status.podIPs, metadata.labels['<key>'] or metadata.annotations['<key>']"
      ),
      bad('spec.env[2].valueFrom.fieldRef.apiVersion', 'spec.env[2].valueFrom.fieldRef.apiVersion v2 is not v1'),
      bad(
        'spec.env[3].valueFrom.resourceFieldRef.resource',
        'spec.env[3].valueFrom.resourceFieldRef.resource limits.nvidia.com/gpu is not one of limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage or a hugepages resource'
      )
    ]
  },
  {
    name: 'nodeName is a Node name, a DNS subdomain',
    given: { ...base, nodeName: 'gpu-node-1\nx' },
    expected: [
      bad(
        'spec.nodeName',
        'spec.nodeName gpu-node-1\nx is not a DNS subdomain (lower-case letters, digits, - and ., each part starting and ending with a letter or digit)'
      )
    ]
  },
  { name: 'a Node name with dots is accepted', given: { ...base, nodeName: 'gpu-1.zone-a.example.com' }, expected: [] }
]

for (const c of specCases) {
  t.test(c.name, async (t) => {
    t.strictSame(specProblems(c.given), c.expected)
  })
}

const a100: InstanceTypeSpec = {
  devicePlugin: 'HAMi',
  families: ['Whole', 'Partitioned'],
  partitionProfiles: ['1g.10gb', '3g.40gb'],
  maxCount: 2
}
const notOffered = (field: string, message: string): SpecProblem => ({ field, reason: 'AcceleratorNotOffered', message })

const typeCases: Array<{ name: string; given: { spec: InstanceSpec; type: InstanceTypeSpec | undefined }; expected: SpecProblem[] }> = [
  {
    name: 'a missing InstanceType is InstanceTypeNotFound',
    given: { spec: base, type: undefined },
    expected: [
      {
        field: 'spec.type',
        reason: 'InstanceTypeNotFound',
        message: 'spec.type a100 names no InstanceType; create InstanceType a100 or name an existing one'
      }
    ]
  },
  {
    name: 'a profile the type does not offer names the offered ones',
    given: { spec: { ...base, resources: { accelerator: { family: 'Partitioned', profile: '7g.80gb' } } }, type: a100 },
    expected: [notOffered(`${A}.profile`, `${A}.profile 7g.80gb is not offered by InstanceType a100; offered: 1g.10gb, 3g.40gb`)]
  },
  {
    name: 'a family the type does not offer names the offered ones',
    given: { spec: { ...base, resources: { accelerator: { family: 'Shared' } } }, type: a100 },
    expected: [notOffered(`${A}.family`, `${A}.family Shared is not offered by InstanceType a100; offered: Whole, Partitioned`)]
  },
  {
    name: 'an absent families list offers Whole only',
    given: { spec: { ...base, resources: { accelerator: { family: 'Shared' } } }, type: {} },
    expected: [notOffered(`${A}.family`, `${A}.family Shared is not offered by InstanceType a100; offered: Whole`)]
  },
  {
    name: 'a count over maxCount names the limit',
    given: { spec: { ...base, resources: { accelerator: { count: 3 } } }, type: a100 },
    expected: [notOffered(`${A}.count`, `${A}.count 3 is over the maxCount of InstanceType a100; at most 2`)]
  },
  {
    name: 'the NVIDIA plugin offers no Sliced family, even when the type lists it',
    given: {
      spec: { ...base, resources: { accelerator: { family: 'Sliced', memoryMiB: 1024 } } },
      type: { devicePlugin: 'NVIDIA', families: ['Whole', 'Sliced', 'Shared'] }
    },
    expected: [
      notOffered(
        `${A}.family`,
        `${A}.family Sliced is not offered by InstanceType a100: the NVIDIA device plugin has no Sliced family; offered: Whole, Shared`
      )
    ]
  },
  {
    name: 'a CPU-only workspace fits every type',
    given: { spec: { ...base, resources: { accelerator: { count: 0 } } }, type: {} },
    expected: []
  },
  {
    name: 'a request the type serves has no problem',
    given: { spec: { ...base, resources: { accelerator: { count: 2 } } }, type: a100 },
    expected: []
  }
]

for (const c of typeCases) {
  t.test(c.name, async (t) => {
    t.strictSame(typeProblems(c.given.spec, 'a100', c.given.type), c.expected)
  })
}

const nameCases: Array<{ name: string; given: string; expected: string[] }> = [
  { name: 'a DNS-1035 name names Pod and Service', given: 'notebook-1', expected: [] },
  {
    name: 'a name starting with a digit is refused even without ports, since a port added later needs the Service',
    given: '1st',
    expected: [
      "metadata.name 1st cannot name the Instance's Service: a Service name must be a DNS-1035 label (lower-case letters, digits and -, starting with a letter and ending with a letter or digit)"
    ]
  },
  {
    name: 'a name longer than a label value is refused',
    given: 'n'.repeat(64),
    expected: [`metadata.name ${'n'.repeat(64)} is 64 characters long; at most 63, because the Pod carries it as a label value`]
  }
]

for (const c of nameCases) {
  t.test(c.name, async (t) => {
    t.strictSame(
      instanceNameProblems(c.given).map((p) => p.message),
      c.expected
    )
  })
}

const defaultCases: Array<{ name: string; given: InstanceSpec; expected: ResolvedSpec }> = [
  {
    name: 'defaults fill pull policy, workspace, stop and no accelerator',
    given: base,
    expected: { ...base, imagePullPolicy: 'IfNotPresent', ports: [], resources: {}, workspace: { mountPath: '/workspace' }, stop: false }
  },
  {
    name: 'defaults fill each port protocol and the accelerator family and count',
    given: {
      ...base,
      ports: [
        { port: 80, name: 'web' },
        { port: 53, protocol: 'UDP' }
      ],
      resources: { cpu: 2, accelerator: {} },
      workspace: { size: '1Gi' }
    },
    expected: {
      ...base,
      imagePullPolicy: 'IfNotPresent',
      ports: [
        { port: 80, name: 'web', protocol: 'TCP' },
        { port: 53, protocol: 'UDP' }
      ],
      resources: { cpu: 2, accelerator: { family: 'Whole', count: 1 } },
      workspace: { size: '1Gi', mountPath: '/workspace' },
      stop: false
    }
  },
  {
    name: 'count 0 resolves to no accelerator',
    given: { ...base, resources: { accelerator: { count: 0 } }, stop: true, imagePullPolicy: 'Always' },
    expected: { ...base, imagePullPolicy: 'Always', ports: [], resources: {}, workspace: { mountPath: '/workspace' }, stop: true }
  }
]

for (const c of defaultCases) {
  t.test(c.name, async (t) => {
    const input = structuredClone(c.given)
    t.strictSame(withDefaults(input), c.expected)
    t.strictSame(input, c.given, 'the input is not changed')
  })
}

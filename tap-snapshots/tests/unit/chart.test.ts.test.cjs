/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`tests/unit/chart.test.ts > TAP > helm template with cert-manager: what differs from the default values (reviewed snapshot) > webhook.certManager.enabled=true 1`] = `
Object {
  "addedOrChanged": String(
    # Source: gpuhooks/templates/cert-manager.yaml
    apiVersion: cert-manager.io/v1
    kind: Certificate
    metadata:
      name: gpuhooks-webhook
      namespace: gpuhooks-system
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/version: "0.1.0"
        app.kubernetes.io/managed-by: Helm
        app.kubernetes.io/part-of: gpuhooks
        helm.sh/chart: gpuhooks-0.1.0
        app.kubernetes.io/component: webhook
    spec:
      secretName: gpuhooks-webhook-tls
      duration: 8760h
      renewBefore: 720h
      dnsNames:
        - gpuhooks.gpuhooks-system.svc
        - gpuhooks.gpuhooks-system.svc.cluster.local
      privateKey:
        algorithm: ECDSA
        size: 256
        rotationPolicy: Always
      issuerRef:
        name: gpuhooks-selfsigned
        kind: Issuer
        group: cert-manager.io
    ---
    # Source: gpuhooks/templates/cert-manager.yaml
    # No issuer named: a self-signed one; the cainjector copies the certificate into the caBundle.
    apiVersion: cert-manager.io/v1
    kind: Issuer
    metadata:
      name: gpuhooks-selfsigned
      namespace: gpuhooks-system
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/version: "0.1.0"
        app.kubernetes.io/managed-by: Helm
        app.kubernetes.io/part-of: gpuhooks
        helm.sh/chart: gpuhooks-0.1.0
        app.kubernetes.io/component: webhook
    spec:
      selfSigned: {}
    ---
    # Source: gpuhooks/templates/webhooks.yaml
    # Admission for instances: failurePolicy Fail, so while the hooks are unreachable a create or
    # update is refused rather than let through unchecked. The caBundle is written after install by
    # cert-manager's cainjector; an apply of this manifest leaves it in place.
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata:
      name: gpuhooks-instance
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/version: "0.1.0"
        app.kubernetes.io/managed-by: Helm
        app.kubernetes.io/part-of: gpuhooks
        helm.sh/chart: gpuhooks-0.1.0
        app.kubernetes.io/component: webhook
      annotations:
        cert-manager.io/inject-ca-from: gpuhooks-system/gpuhooks-webhook
    webhooks:
      - name: instances.worker.gpustack.ai
        admissionReviewVersions: [v1]
        sideEffects: None
        failurePolicy: Fail
        matchPolicy: Equivalent
        timeoutSeconds: 10
        clientConfig:
          service:
            name: gpuhooks
            namespace: gpuhooks-system
            port: 443
            path: /admission/instance
        rules:
          - apiGroups: ["worker.gpustack.ai"]
            apiVersions: [v1alpha1]
            resources: [instances]
            operations: [CREATE, UPDATE]
            scope: Namespaced
    ---
    # Source: gpuhooks/templates/webhooks.yaml
    # Admission for gpucellpools: failurePolicy Fail, so while the hooks are unreachable a create or
    # update is refused rather than let through unchecked. The caBundle is written after install by
    # cert-manager's cainjector; an apply of this manifest leaves it in place.
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata:
      name: gpuhooks-cellpool
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/version: "0.1.0"
        app.kubernetes.io/managed-by: Helm
        app.kubernetes.io/part-of: gpuhooks
        helm.sh/chart: gpuhooks-0.1.0
        app.kubernetes.io/component: webhook
      annotations:
        cert-manager.io/inject-ca-from: gpuhooks-system/gpuhooks-webhook
    webhooks:
      - name: gpucellpools.cells.kubeswift.io
        admissionReviewVersions: [v1]
        sideEffects: None
        failurePolicy: Fail
        matchPolicy: Equivalent
        timeoutSeconds: 10
        clientConfig:
          service:
            name: gpuhooks
            namespace: gpuhooks-system
            port: 443
            path: /admission/cellpool
        rules:
          - apiGroups: ["cells.kubeswift.io"]
            apiVersions: [v1alpha1]
            resources: [gpucellpools]
            operations: [CREATE, UPDATE]
            scope: Namespaced
    
  ),
  "removed": Array [
    "ServiceAccount/gpuhooks-system/gpuhooks-certs",
    "ClusterRole//gpuhooks-certs",
    "ClusterRoleBinding//gpuhooks-certs",
    "Role/gpuhooks-system/gpuhooks-certs",
    "RoleBinding/gpuhooks-system/gpuhooks-certs",
    "Job/gpuhooks-system/gpuhooks-certs-1",
    "CronJob/gpuhooks-system/gpuhooks-certs",
    "ValidatingWebhookConfiguration//gpuhooks-instance",
    "ValidatingWebhookConfiguration//gpuhooks-cellpool",
  ],
}
`

exports[`tests/unit/chart.test.ts > TAP > helm template with default values (reviewed snapshot) > default values 1`] = `
---
# Source: gpuhooks/templates/agent.yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: gpuhooks-agent
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: gpuhooks
      app.kubernetes.io/instance: gpuhooks
      app.kubernetes.io/component: agent
---
# Source: gpuhooks/templates/hooks.yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: gpuhooks
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: hooks
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: gpuhooks
      app.kubernetes.io/instance: gpuhooks
      app.kubernetes.io/component: hooks
---
# Source: gpuhooks/templates/agent.yaml
# The workload agent (workload.md): with cell pools, reads CellNodeSets, acts on the workload
# clusters named by their kubeconfig Secrets, writes the CellNodeSets' status; with the activity
# controller (agent.activity), observes Instances and carries out the stops their hook requests.
# Each part only with its rights. One replica is active at a time (a coordination.k8s.io Lease in
# this namespace); the other stands by.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpuhooks-agent
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
---
# Source: gpuhooks/templates/certs.yaml
# The webhook certificate, made in the cluster by the chart's own image: no key is part of this
# manifest. The Job runs at install and at every upgrade (a new name per revision), the CronJob
# weekly; both keep a valid certificate and renew it within renewBeforeDays of expiry.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpuhooks-certs
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
---
# Source: gpuhooks/templates/hooks.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpuhooks
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: hooks
# The hook service calls no API: Metacontroller sends it everything it reads.
automountServiceAccountToken: false
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: cellinfrastructures.cells.kubeswift.io
spec:
  group: cells.kubeswift.io
  names:
    categories:
    - kubeswift
    kind: CellInfrastructure
    listKind: CellInfrastructureList
    plural: cellinfrastructures
    shortNames:
    - cinfra
    singular: cellinfrastructure
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: The Machines of the pool.
      jsonPath: .spec.machines[*].name
      name: Machines
      type: string
    - description: The spec generation the agent carried out.
      jsonPath: .status.observedGeneration
      name: Observed
      type: integer
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: The KubeSwiftMachines and bootstrap configs of a Cluster API
          cell pool (spec, written by the cellpool controller) and what the workload
          agent created and released (status).
        properties:
          apiVersion:
            description: 'API group and version of this object: cells.kubeswift.io/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: CellInfrastructure.'
            type: string
          metadata:
            type: object
          spec:
            description: Written by the cellpool controller only.
            properties:
              machines:
                description: One entry per Machine of the pool.
                items:
                  description: The objects one Machine references, and whether the
                    pool lets it go.
                  properties:
                    bootstrapConfig:
                      description: 'A bootstrap config created from a template; absent:
                        the Machine names a data Secret of the pool.'
                      properties:
                        apiGroup:
                          description: 'API group of the config and its template:
                            bootstrap.cluster.x-k8s.io.'
                          enum:
                          - bootstrap.cluster.x-k8s.io
                          type: string
                        kind:
                          description: 'Kind of the config (the template kind without
                            Template): KubeadmConfig, RKE2Config or KThreesConfig.'
                          enum:
                          - KubeadmConfig
                          - RKE2Config
                          - KThreesConfig
                          type: string
                        labels:
                          additionalProperties:
                            type: string
                          description: Labels of the bootstrap config.
                          type: object
                        templateName:
                          description: The template in this namespace whose spec.template.spec
                            becomes the config spec, read once, when the config is
                            created.
                          maxLength: 253
                          minLength: 1
                          type: string
                      required:
                      - apiGroup
                      - kind
                      - templateName
                      type: object
                    kubeSwiftMachine:
                      description: The KubeSwiftMachine (infrastructure.cluster.x-k8s.io/v1alpha1)
                        the Machine references.
                      properties:
                        annotations:
                          additionalProperties:
                            type: string
                          description: Annotations of the KubeSwiftMachine.
                          type: object
                        labels:
                          additionalProperties:
                            type: string
                          description: Labels of the KubeSwiftMachine.
                          type: object
                        spec:
                          description: The KubeSwiftMachine spec.
                          type: object
                          x-kubernetes-preserve-unknown-fields: true
                      required:
                      - spec
                      type: object
                    machineUID:
                      description: 'With release: the uid of the Machine the pool
                        lets go. The agent releases no other Machine of this name,
                        such as one rebuilt under the same name while its copy of
                        this entry is older than that Machine.'
                      maxLength: 128
                      type: string
                    name:
                      description: The Machine name, the cell name; the objects below
                        get it too.
                      maxLength: 63
                      minLength: 1
                      type: string
                    release:
                      description: 'true: the pool has drained the cell; the agent
                        adds machine.cluster.x-k8s.io/exclude-node-draining to the
                        Machine and removes the pool deletion hooks, so Cluster API
                        deletes the VM without evicting anything.'
                      type: boolean
                  required:
                  - name
                  - kubeSwiftMachine
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              poolUID:
                description: The pool uid; the agent acts only for Machines this pool
                  controls.
                minLength: 1
                type: string
            required:
            - poolUID
            type: object
          status:
            description: Written by the workload agent only.
            properties:
              machines:
                description: One row per spec.machines entry.
                items:
                  description: What the agent did for one Machine.
                  properties:
                    bootstrapConfig:
                      description: The bootstrap config exists for this Machine (or
                        none is needed).
                      type: boolean
                    kubeSwiftMachine:
                      description: The KubeSwiftMachine exists for this Machine.
                      type: boolean
                    message:
                      description: Why something could not be done yet.
                      type: string
                    name:
                      description: The Machine (the spec entry).
                      type: string
                    released:
                      description: The Machine carries none of the pool deletion hooks.
                      type: boolean
                  required:
                  - name
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              observedGeneration:
                description: The spec generation the agent carried out.
                type: integer
            type: object
        required:
        - spec
        type: object
    served: true
    storage: true
    subresources:
      status: {}
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: cellnodesets.cells.kubeswift.io
spec:
  group: cells.kubeswift.io
  names:
    categories:
    - kubeswift
    kind: CellNodeSet
    listKind: CellNodeSetList
    plural: cellnodesets
    shortNames:
    - cns
    singular: cellnodeset
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: The workload cluster answered the agent.
      jsonPath: .status.conditions[?(@.type=="Reachable")].status
      name: Reachable
      type: string
    - description: Nodes carrying the pool uid label.
      jsonPath: .status.nodeCount
      name: Nodes
      type: integer
    - description: The agent last complete observation.
      jsonPath: .status.observedTime
      name: Observed
      type: date
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: A GPU cell pool request to its workload cluster (spec, written
          by the cellpool controller) and what the workload agent saw there (status).
        properties:
          apiVersion:
            description: 'API group and version of this object: cells.kubeswift.io/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: CellNodeSet.'
            type: string
          metadata:
            type: object
          spec:
            description: Written by the cellpool controller only.
            properties:
              demand:
                description: 'Which pending Pods count as demand for this pool; absent:
                  no demand is read.'
                properties:
                  nodeLabels:
                    additionalProperties:
                      type: string
                    description: 'Labels a pool Node carries: a Pod counts only if
                      its node selector and required affinity match them.'
                    type: object
                  resources:
                    description: Resource names whose pending requests count as demand
                      (nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores).
                    items:
                      type: string
                    type: array
                  taints:
                    description: 'Taints a pool Node carries: a Pod counts only if
                      it tolerates them.'
                    items:
                      description: A Node taint; taints are matched by key and effect.
                      properties:
                        effect:
                          description: NoSchedule, PreferNoSchedule or NoExecute.
                          enum:
                          - NoSchedule
                          - PreferNoSchedule
                          - NoExecute
                          type: string
                        key:
                          description: The taint key.
                          minLength: 1
                          type: string
                        value:
                          description: The taint value (may be empty).
                          type: string
                      required:
                      - key
                      - effect
                      type: object
                    type: array
                required:
                - resources
                type: object
              dra:
                description: 'HAMi''s DRA mode: the agent reads the Nodes'' devices
                  from ResourceSlices of driver hami-core-gpu.project-hami.io, their
                  allocations from ResourceClaims, and demand from pending Pods''
                  unallocated claims on this class, instead of HAMi''s Node and Pod
                  annotations. Absent: HAMi''s device plugin mode.'
                properties:
                  deviceClassName:
                    description: The pool's HAMi DeviceClass (spec.capacity.hami.deviceClassName).
                    maxLength: 253
                    minLength: 1
                    type: string
                required:
                - deviceClassName
                type: object
              kubeconfigSecretRef:
                description: 'The workload cluster kubeconfig. The Secret must carry
                  the label cells.kubeswift.io/workload-kubeconfig: "true", and the
                  kubeconfig may use only server, certificate-authority-data, tls-server-name,
                  token, client-certificate-data and client-key-data.'
                properties:
                  key:
                    description: Key of the kubeconfig in that Secret.
                    minLength: 1
                    type: string
                  name:
                    description: Secret in this namespace holding the workload cluster
                      kubeconfig.
                    minLength: 1
                    type: string
                required:
                - name
                - key
                type: object
              nodes:
                description: One entry per cell the pool holds (draining ones too).
                items:
                  description: A Node the pool expects in the workload cluster and
                    what it must carry.
                  properties:
                    annotations:
                      additionalProperties:
                        type: string
                      description: Annotations the Node must carry.
                      type: object
                    cordon:
                      description: 'true: the Node must be unschedulable (the cell
                        drains). false: the agent clears unschedulable only if it
                        set it.'
                      type: boolean
                    instance:
                      description: The uid of the cell SwiftGuest, the value of the
                        label cells.kubeswift.io/instance its kubelet registers; empty
                        until the guest exists.
                      type: string
                    labels:
                      additionalProperties:
                        type: string
                      description: Labels the Node must carry.
                      type: object
                    name:
                      description: 'The Node name: the cell name.'
                      maxLength: 63
                      minLength: 1
                      type: string
                    providerID:
                      description: 'Cluster API cells: the Machine providerID (kubeswift://<namespace>/<machine>).
                        A Node with this spec.providerID and no cells.kubeswift.io/pool-uid
                        label is the cell own registration (a bootstrap config template
                        gives its kubelet no pool labels), and the agent writes the
                        pool labels onto it.'
                      maxLength: 512
                      type: string
                    readyOnce:
                      description: 'true: the cell''s machine named by instance was
                        Ready once. The cellpool controller''s own record, read back
                        on its next sync so that a pool status older than this spec
                        cannot forget it; the agent ignores it.'
                      type: boolean
                    taints:
                      description: Taints the Node must carry (matched by key and
                        effect).
                      items:
                        description: A Node taint; taints are matched by key and effect.
                        properties:
                          effect:
                            description: NoSchedule, PreferNoSchedule or NoExecute.
                            enum:
                            - NoSchedule
                            - PreferNoSchedule
                            - NoExecute
                            type: string
                          key:
                            description: The taint key.
                            minLength: 1
                            type: string
                          value:
                            description: The taint value (may be empty).
                            type: string
                        required:
                        - key
                        - effect
                        type: object
                      type: array
                  required:
                  - name
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              physicalGPUs:
                description: 'A DRA pool: the agent summarizes the infrastructure
                  cluster''s devices of this driver into status.physicalGPUs, from
                  which the pool decides whether a free GPU is left for a new cell.'
                properties:
                  claimName:
                    description: 'The pool''s shared ResourceClaim (cell.gpu.dra.resourceClaimName),
                      in this namespace: the devices it holds are the pool''s.'
                    maxLength: 253
                    type: string
                  driver:
                    description: The DRA driver of the cells' physical GPUs in the
                      infrastructure cluster (gpu.kubeswift.io).
                    maxLength: 63
                    minLength: 1
                    type: string
                required:
                - driver
                type: object
              poolUID:
                description: 'The pool uid: the value of the label cells.kubeswift.io/pool-uid
                  on its Nodes.'
                minLength: 1
                type: string
            required:
            - kubeconfigSecretRef
            - poolUID
            type: object
          status:
            description: Written by the workload agent only.
            properties:
              conditions:
                description: Reachable (reasons Reachable, CredentialInvalid, Forbidden,
                  Unreachable).
                items:
                  description: A standard condition.
                  properties:
                    lastTransitionTime:
                      description: When status last changed.
                      format: date-time
                      type: string
                    message:
                      description: What a person should know or do.
                      type: string
                    observedGeneration:
                      description: The metadata.generation this condition describes.
                      type: integer
                    reason:
                      description: One CamelCase word a program can switch on.
                      type: string
                    status:
                      description: True, False or Unknown.
                      enum:
                      - "True"
                      - "False"
                      - Unknown
                      type: string
                    type:
                      description: Reachable.
                      type: string
                  required:
                  - type
                  - status
                  - reason
                  - message
                  - lastTransitionTime
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - type
                x-kubernetes-list-type: map
              demand:
                description: Pods pending for lack of GPU that could run on a pool
                  Node.
                properties:
                  cell:
                    description: 'What one cell offers: the smallest figures among
                      the pool Nodes that are Ready and have a healthy device.'
                    properties:
                      cpuMillicores:
                        description: Allocatable CPU of a cell Node, millicores.
                        maximum: 9007199254740991
                        minimum: 0
                        type: integer
                      deviceCores:
                        description: Compute of a device, percent.
                        maximum: 9007199254740991
                        minimum: 0
                        type: integer
                      deviceMemoryMiB:
                        description: Memory of a device, MiB.
                        maximum: 9007199254740991
                        minimum: 0
                        type: integer
                      devices:
                        description: Healthy HAMi devices of a cell Node.
                        maximum: 9007199254740991
                        minimum: 0
                        type: integer
                      memoryBytes:
                        description: Allocatable memory of a cell Node, bytes.
                        maximum: 9007199254740991
                        minimum: 0
                        type: integer
                    required:
                    - cpuMillicores
                    - memoryBytes
                    - devices
                    - deviceMemoryMiB
                    - deviceCores
                    type: object
                  pendingPods:
                    description: Pending Pods that count as demand for this pool.
                    maximum: 9007199254740991
                    minimum: 0
                    type: integer
                  read:
                    description: Pending Pods were listed.
                    type: boolean
                  shapes:
                    description: Grouped by request, largest first, at most 50.
                    items:
                      description: Pending Pods grouped by identical request; each
                        figure at most 2^53 - 1 (a larger request is held there).
                      properties:
                        cores:
                          description: 'Device compute requested per Pod, percent
                            (0: not stated).'
                          maximum: 9007199254740991
                          minimum: 0
                          type: integer
                        devices:
                          description: Devices requested per Pod.
                          maximum: 9007199254740991
                          minimum: 0
                          type: integer
                        memoryMiB:
                          description: 'Device memory requested per Pod, MiB (0: not
                            stated).'
                          maximum: 9007199254740991
                          minimum: 0
                          type: integer
                        pods:
                          description: Pending Pods with this request.
                          maximum: 9007199254740991
                          minimum: 0
                          type: integer
                      required:
                      - devices
                      - memoryMiB
                      - cores
                      - pods
                      type: object
                    maxItems: 50
                    type: array
                  truncated:
                    description: 'True when the list of pending Pods stopped at the
                      agent bound (AGENT_MAX_PENDING_PODS, or the bytes a pass may
                      read): only the Pods listed were counted.'
                    type: boolean
                  unreadablePods:
                    description: 'Pending Pods that would count but whose request
                      does not read (a quantity that does not parse, is negative or
                      is past 2^53 - 1); they are not demand. Absent: none.'
                    maximum: 9007199254740991
                    minimum: 0
                    type: integer
                  unrunnablePods:
                    description: 'Pending Pods that would count but ask for more than
                      one cell offers (CPU, memory, devices, device memory or compute
                      against cell); they are not demand. Absent: none.'
                    maximum: 9007199254740991
                    minimum: 0
                    type: integer
                required:
                - read
                - pendingPods
                type: object
              dra:
                description: 'HAMi DRA mode (spec.dra): what the agent could read
                  of DRA in the workload cluster.'
                properties:
                  claimsRead:
                    description: 'The workload cluster''s ResourceClaims were listed
                      (false: allocations and demand are unread).'
                    type: boolean
                  claimsTruncated:
                    description: 'The claim list stopped at the agent bound: allocations
                      are unread, demand counts what was listed.'
                    type: boolean
                  deviceClass:
                    description: 'Whether the DeviceClass spec.dra.deviceClassName
                      exists in the workload cluster (Unread: the get failed).'
                    enum:
                    - Found
                    - Missing
                    - Unread
                    type: string
                  message:
                    description: What a person should know about the DRA reading.
                    type: string
                required:
                - deviceClass
                - claimsRead
                type: object
              foreignNodes:
                description: 'Nodes carrying the pool uid label under a name no cell
                  of the pool has (a kubelet may set that label on itself): never
                  written, counted or deleted by the agent.'
                minimum: 0
                type: integer
              nodeCount:
                description: Nodes in the workload cluster named as cells of the pool
                  (<pool>-<index>) and carrying the pool uid label.
                type: integer
              nodes:
                description: One row per spec.nodes entry.
                items:
                  description: What the agent saw of one listed Node.
                  properties:
                    allocations:
                      description: HAMi allocations on the Node.
                      properties:
                        inFlight:
                          description: A Pod is being allocated a device on the Node.
                          type: boolean
                        pods:
                          description: Non-terminal Pods holding a HAMi allocation
                            on the Node.
                          type: integer
                        read:
                          description: The Pods on the Node were listed.
                          type: boolean
                      required:
                      - read
                      - pods
                      type: object
                    applied:
                      description: What the agent wrote, or writes next, onto this
                        Node object. It writes only what this record already held
                        when its pass began, so that nothing it set goes unrecorded.
                      properties:
                        annotations:
                          description: The annotation keys the agent set on the Node
                            or sets next, and those it set and has yet to see gone
                            (at most 128 wanted and as many to remove).
                          items:
                            maxLength: 317
                            minLength: 1
                            type: string
                          maxItems: 256
                          type: array
                        cordoned:
                          description: The agent made the Node unschedulable, or does
                            next; it clears only a cordon it recorded.
                          type: boolean
                        instance:
                          description: The instance the agent adopted this Node object
                            for (the label cells.kubeswift.io/instance it writes).
                          maxLength: 63
                          minLength: 1
                          type: string
                        labels:
                          description: The label keys the agent set on the Node or
                            sets next, and those it set and has yet to see gone (at
                            most 128 wanted and as many to remove).
                          items:
                            maxLength: 317
                            minLength: 1
                            type: string
                          maxItems: 256
                          type: array
                        taints:
                          description: The taints the agent set, or sets next, and
                            those it set and has yet to see gone (at most 32 wanted).
                          items:
                            description: A taint, by key and effect.
                            properties:
                              effect:
                                description: The taint effect.
                                enum:
                                - NoSchedule
                                - PreferNoSchedule
                                - NoExecute
                                type: string
                              key:
                                description: The taint key.
                                maxLength: 317
                                minLength: 1
                                type: string
                            required:
                            - key
                            - effect
                            type: object
                          maxItems: 64
                          type: array
                        uid:
                          description: 'The uid of the Node object: a Node registered
                            again under the name is another object, to which nothing
                            here applies.'
                          maxLength: 128
                          minLength: 1
                          type: string
                      required:
                      - uid
                      - instance
                      - labels
                      - annotations
                      - taints
                      - cordoned
                      type: object
                    conflict:
                      description: The Node belongs to another VM or pool; the agent
                        writes nothing to it.
                      type: boolean
                    consumableCapacity:
                      description: 'DRA mode: Enabled when the Node''s HAMi devices
                        carry allowMultipleAllocations; Disabled when they do not
                        (the API server drops it while DRAConsumableCapacity is off:
                        each GPU then goes whole to one claim); Unpublished when a
                        device carries no cores or memory capacity (its share is unknown,
                        never zero).'
                      enum:
                      - Enabled
                      - Disabled
                      - Unpublished
                      type: string
                    devices:
                      description: Devices HAMi registered on the Node, at most 64
                        (a longer registration is Unparseable).
                      items:
                        description: One GPU device HAMi registered on the Node.
                        properties:
                          allocatedCores:
                            description: 'DRA mode: device compute the allocated ResourceClaims
                              consume on this device (consumedCapacity), percent.'
                            minimum: 0
                            type: integer
                          allocatedMemoryMiB:
                            description: 'DRA mode: device memory the allocated ResourceClaims
                              consume on this device (consumedCapacity), MiB.'
                            minimum: 0
                            type: integer
                          cores:
                            description: Device compute, in percent (HAMi devcore).
                            type: integer
                          healthy:
                            description: HAMi reports the device healthy.
                            type: boolean
                          id:
                            description: Device id (UUID), at most 128 characters
                              (a longer one makes the registration Unparseable).
                            maxLength: 128
                            type: string
                          memoryMiB:
                            description: Device memory in MiB.
                            type: integer
                          type:
                            description: Device type, e.g. NVIDIA-NVIDIA A100-SXM4-80GB;
                              clipped to 128 characters.
                            maxLength: 128
                            type: string
                        required:
                        - id
                        - type
                        - memoryMiB
                        - cores
                        - healthy
                        type: object
                      maxItems: 64
                      type: array
                    instance:
                      description: The Node label cells.kubeswift.io/instance when
                        the agent wrote it onto this Node object (applied.instance);
                        empty otherwise.
                      type: string
                    live:
                      description: The kubelet still heartbeats (judged by the agent
                        clock).
                      type: boolean
                    message:
                      description: What a person should know about this Node.
                      type: string
                    name:
                      description: The Node name (the spec entry).
                      type: string
                    poolUID:
                      description: The Node label cells.kubeswift.io/pool-uid.
                      type: string
                    present:
                      description: A Node of this name exists in the workload cluster.
                      type: boolean
                    ready:
                      description: The Node Ready condition is True.
                      type: boolean
                    registration:
                      description: 'The HAMi registration annotation: Missing, Parsed
                        or Unparseable. DRA mode: Parsed when a ResourceSlice of HAMi
                        publishes a device for the Node, Missing when none does, Unparseable
                        when the slices could not be listed.'
                      enum:
                      - Missing
                      - Parsed
                      - Unparseable
                      type: string
                    unschedulable:
                      description: The Node is cordoned.
                      type: boolean
                  required:
                  - name
                  - present
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              observedGeneration:
                description: The spec generation whose actions were carried out.
                type: integer
              observedTime:
                description: The agent last complete observation, taken after those
                  actions.
                format: date-time
                type: string
              physicalGPUs:
                description: 'The infrastructure cluster''s physical GPUs of the pool''s
                  driver, summarized by the agent (spec.physicalGPUs); absent or older
                  than 2 minutes: the pool waits before building a cell.'
                properties:
                  held:
                    description: Ready devices an allocated ResourceClaim of any namespace
                      holds.
                    minimum: 0
                    type: integer
                  observedTime:
                    description: When the agent computed this summary from its informers.
                    format: date-time
                    type: string
                  own:
                    description: Ready devices the pool's own shared claim (spec.physicalGPUs.claimName)
                      holds.
                    minimum: 0
                    type: integer
                  published:
                    description: Devices of spec.physicalGPUs.driver the ResourceSlices
                      publish.
                    minimum: 0
                    type: integer
                  ready:
                    description: Of those, devices not reporting vfioReady false.
                    minimum: 0
                    type: integer
                required:
                - observedTime
                - published
                - ready
                - held
                - own
                type: object
              swept:
                description: The last 20 Nodes the agent deleted.
                items:
                  description: A Node the agent deleted because its kubelet stopped
                    heartbeating.
                  properties:
                    instance:
                      description: Its cells.kubeswift.io/instance label.
                      type: string
                    name:
                      description: The Node name.
                      type: string
                    reason:
                      description: 'Stale: an old VM under a listed name. Orphan:
                        no longer listed.'
                      enum:
                      - Stale
                      - Orphan
                      type: string
                    time:
                      description: When the agent deleted it.
                      format: date-time
                      type: string
                  required:
                  - name
                  - reason
                  - time
                  type: object
                maxItems: 20
                type: array
            type: object
        required:
        - spec
        type: object
    served: true
    storage: true
    subresources:
      status: {}
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: gpucellpools.cells.kubeswift.io
spec:
  group: cells.kubeswift.io
  names:
    categories:
    - kubeswift
    kind: GPUCellPool
    listKind: GPUCellPoolList
    plural: gpucellpools
    shortNames:
    - cellpool
    singular: gpucellpool
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: Cells asked for in spec.replicas.
      jsonPath: .spec.replicas
      name: Desired
      type: integer
    - description: Cells in phase Ready.
      jsonPath: .status.readyCells
      name: Ready
      type: integer
    - description: 'The Ready condition: enough cells are Ready.'
      jsonPath: .status.conditions[?(@.type=="Ready")].status
      name: Available
      type: string
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: 'A pool of GPU cells: KubeSwift VMs with one whole GPU each,
          joined to a workload cluster as nodes that HAMi shares.'
        properties:
          apiVersion:
            description: 'API group and version of this object: cells.kubeswift.io/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: GPUCellPool.'
            type: string
          metadata:
            type: object
          spec:
            description: The desired pool.
            properties:
              autoscaling:
                description: Demand-driven desired size; the hook never writes spec.replicas.
                properties:
                  enabled:
                    default: false
                    description: 'true: the pool sizes itself from pending GPU Pods
                      in the workload cluster (status.desiredReplicas).'
                    type: boolean
                  maxReplicas:
                    description: Ceiling; required when enabled.
                    maximum: 100000
                    minimum: 1
                    type: integer
                  minReplicas:
                    description: Floor; default spec.replicas. Required with scaleDown
                      Auto.
                    maximum: 100000
                    minimum: 0
                    type: integer
                  scaleDown:
                    default: Manual
                    description: 'Manual: only spec changes shrink the pool. Auto:
                      an idle cell drains once demand is gone.'
                    enum:
                    - Manual
                    - Auto
                    type: string
                  scaleDownStabilizationWindow:
                    default: 30m
                    description: How long demand must stay absent, and the time since
                      the last scale action, before a scale-down.
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: must be a duration such as 0s, 90s, 15m or 1h30m
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) >= duration('0s')
                  stabilizationWindow:
                    default: 10m
                    description: Time after a scale-up before the next scale-up.
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: must be a duration such as 0s, 90s, 15m or 1h30m
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) >= duration('0s')
                type: object
                x-kubernetes-validations:
                - message: maxReplicas is required when autoscaling is enabled
                  rule: '!(has(self.enabled) && self.enabled) || has(self.maxReplicas)'
                - message: minReplicas must not exceed maxReplicas
                  rule: '!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas
                    <= self.maxReplicas'
                - message: scaleDown Auto needs minReplicas
                  rule: '!has(self.scaleDown) || self.scaleDown != ''Auto'' || has(self.minReplicas)'
              bootstrap:
                description: How a cell joins the workload cluster.
                properties:
                  hostname:
                    default: CellName
                    description: 'CellName: the guest hostname, and so the Node name,
                      is the cell name (through the seed metadata). None: the image
                      decides.'
                    enum:
                    - CellName
                    - None
                    type: string
                  joinSecretKey:
                    default: user-data
                    description: Key of the template in the join Secret.
                    maxLength: 253
                    type: string
                  joinSecretRef:
                    description: 'Secret in the pool namespace holding the cloud-init
                      join template. Required. Tokens: {{ cellName }}, {{ poolName
                      }}, {{ nodeLabels }} (required), {{ nodeIPInterface }}, {{ expectedGPUs
                      }}, {{ nodeName }}, {{ cellIndex }}, {{ nodeTaints }}.'
                    properties:
                      name:
                        description: Name of the referent, in the pool namespace.
                        maxLength: 253
                        type: string
                    required:
                    - name
                    type: object
                    x-kubernetes-map-type: atomic
                  provider:
                    default: Opaque
                    description: 'Opaque: the join template is used as written, with
                      the tokens replaced. The only value.'
                    enum:
                    - Opaque
                    type: string
                  readyTimeout:
                    default: 15m
                    description: Budget of each phase up to Joining before a cell
                      first becomes Ready; past it the cell fails.
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: must be a positive duration such as 90s, 15m or 1h30m
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) > duration('0s')
                type: object
              capacity:
                description: How a cell GPU capacity is recognised in the workload
                  cluster.
                properties:
                  hami:
                    description: HAMi settings.
                    properties:
                      deviceClassName:
                        description: HAMi DeviceClass of DRA mode (e.g. hami-core-gpu.project-hami.io);
                          required with mode DRA.
                        maxLength: 253
                        type: string
                      expectedDevicesPerCell:
                        description: 'Healthy HAMi devices a cell Node must register
                          before it counts Ready. Default: cell.gpu.count.'
                        minimum: 1
                        type: integer
                      mode:
                        default: DevicePlugin
                        description: 'DevicePlugin: HAMi Node registration and Pod
                          annotations. DRA: HAMi''s DRA driver; the workload agent
                          reads devices from its ResourceSlices, allocations from
                          ResourceClaims and demand from pending Pods'' unallocated
                          claims on deviceClassName.'
                        enum:
                        - DevicePlugin
                        - DRA
                        type: string
                      resourceName:
                        default: nvidia.com/gpu
                        description: 'HAMi whole-device resource name; demand is read
                          for it and its gpumem and gpucores siblings. Not in gpucellpool:
                          added because a HAMi installation may rename its resources.'
                        maxLength: 253
                        type: string
                    type: object
                    x-kubernetes-validations:
                    - message: 'spec.capacity.hami.deviceClassName is required with
                        mode DRA: it names the DeviceClass of HAMi''s DRA driver in
                        the workload cluster'
                      rule: '!has(self.mode) || self.mode != ''DRA'' || (has(self.deviceClassName)
                        && size(self.deviceClassName) > 0)'
                  provider:
                    default: HAMi
                    description: The GPU sharing layer inside the cells; HAMi is the
                      only value.
                    enum:
                    - HAMi
                    type: string
                  readyTimeout:
                    default: 5m
                    description: Budget of AwaitingGPUCapacity (Node Ready, GPU not
                      yet registered by HAMi) before a cell first becomes Ready.
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: must be a positive duration such as 90s, 15m or 1h30m
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) > duration('0s')
                type: object
              cell:
                description: 'The shape of one cell: its VM and its GPU.'
                properties:
                  clusterAPI:
                    description: Settings of the ClusterAPI provisioner; required
                      with it. The guestTemplate may then carry only imageRef, guestClassRef
                      and interfaces.
                    properties:
                      bootstrapConfigTemplateRef:
                        description: 'A Cluster API bootstrap config template (its
                          kind ends in Template) in the pool namespace: each Machine
                          gets a config of the kind without Template, at v1beta2,
                          copied from it. Absent: each Machine gets a data Secret
                          rendered from bootstrap.joinSecretRef. With it, joinSecretRef
                          must not be set.'
                        properties:
                          apiGroup:
                            description: API group of the bootstrap config template.
                            minLength: 1
                            type: string
                          kind:
                            description: Kind of the bootstrap config template.
                            minLength: 1
                            type: string
                          name:
                            description: Name of the template in the pool namespace.
                            minLength: 1
                            type: string
                        required:
                        - apiGroup
                        - kind
                        - name
                        type: object
                      clusterName:
                        description: The Cluster API Cluster, in the pool namespace,
                          whose Machines the cells are. Required with provisioner
                          ClusterAPI.
                        maxLength: 63
                        minLength: 1
                        type: string
                      version:
                        description: Kubernetes version copied to each Machine spec.version.
                        type: string
                    required:
                    - clusterName
                    type: object
                  gpu:
                    description: The one whole GPU passed into each cell VM.
                    properties:
                      backend:
                        default: DRA
                        description: 'DRA: the scheduler allocates the GPU through
                          a ResourceClaim. Native: KubeSwift allocates it from a SwiftGPUProfile.'
                        enum:
                        - DRA
                        - Native
                        type: string
                      count:
                        default: 1
                        description: Whole GPUs per cell; 1 is the only value (HAMi
                          shares it inside the cell).
                        maximum: 1
                        minimum: 1
                        type: integer
                      dra:
                        description: 'DRA backend: the claim the cell launcher pod
                          carries. Exactly one of resourceClaimTemplateName and resourceClaimName.'
                        properties:
                          hugepages:
                            description: 'Hugepage size backing the GPU memory of
                              the VM: 1Gi, 2Mi or empty (none).'
                            enum:
                            - ""
                            - 1Gi
                            - 2Mi
                            type: string
                          requestName:
                            default: gpu
                            description: The device request inside the claim whose
                              allocation the VM gets.
                            maxLength: 63
                            type: string
                          resourceClaimName:
                            description: One pre-created ResourceClaim shared by the
                              cells. A VFIO device backs one running VM, so only for
                              a pool of at most one cell.
                            maxLength: 253
                            type: string
                          resourceClaimTemplateName:
                            description: 'A ResourceClaimTemplate: each cell gets
                              its own claim. Recommended.'
                            maxLength: 253
                            type: string
                          tier:
                            default: pcie
                            description: KubeSwift hypervisor and firmware tier; pcie
                              (Cloud Hypervisor) is the only one a cell supports.
                            enum:
                            - pcie
                            type: string
                        type: object
                        x-kubernetes-validations:
                        - message: set exactly one of resourceClaimTemplateName and
                            resourceClaimName
                          rule: (has(self.resourceClaimTemplateName) && self.resourceClaimTemplateName
                            != '') != (has(self.resourceClaimName) && self.resourceClaimName
                            != '')
                      native:
                        description: 'Native backend: the SwiftGPUProfile the VM takes
                          its GPU from.'
                        properties:
                          gpuProfileRef:
                            description: The SwiftGPUProfile in the pool namespace.
                            properties:
                              name:
                                description: Name of the referent, in the pool namespace.
                                maxLength: 253
                                type: string
                            required:
                            - name
                            type: object
                            x-kubernetes-map-type: atomic
                        required:
                        - gpuProfileRef
                        type: object
                    type: object
                    x-kubernetes-validations:
                    - message: backend DRA needs dra and no native; backend Native
                        needs native and no dra
                      rule: '(has(self.backend) && self.backend == ''Native'') ? (has(self.native)
                        && !has(self.dra)) : (has(self.dra) && !has(self.native))'
                  guestTemplate:
                    description: 'A KubeSwift SwiftGuestSpec, copied verbatim into
                      every cell guest, at most 64 KiB as JSON. A cell may set imageRef,
                      guestClassRef (both required), dataDiskRef, dataDiskRefs, interfaces
                      (names are DNS labels), network, storage, osType (linux), schedulerName,
                      topologySpreadConstraints and guestAgent; any other field is
                      refused. Set by the controller: seedProfileRef, gpuProfileRef,
                      gpuResourceClaim, nodeName, migration, runPolicy. Not supported
                      on the GPU path: kernelRef, kernelCmdline, cloneFromSnapshot,
                      vhostUserDevices, filesystems, osType windows.'
                    type: object
                    x-kubernetes-preserve-unknown-fields: true
                  nodeIPFrom:
                    description: 'Name of a guestTemplate interface whose IP is the
                      node address (the {{ nodeIPInterface }} token), a DNS label:
                      it goes into the boot script. Empty: the primary interface.'
                    maxLength: 63
                    pattern: ^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$
                    type: string
                  provisioner:
                    default: SwiftGuest
                    description: 'SwiftGuest: a KubeSwift SwiftGuest per cell. ClusterAPI:
                      a Cluster API Machine per cell, of the Cluster clusterAPI.clusterName,
                      with a KubeSwiftMachine the workload agent creates.'
                    enum:
                    - SwiftGuest
                    - ClusterAPI
                    type: string
                  spreadPolicy:
                    default: Spread
                    description: 'Accepted for gpucellpool manifests, not acted on:
                      KubeSwift GPU launcher pods ignore topology spread constraints.'
                    enum:
                    - Spread
                    - Pack
                    type: string
                required:
                - guestTemplate
                - gpu
                type: object
              deletion:
                description: What deleting the pool does to cells still in use.
                properties:
                  drainTimeout:
                    default: 10m
                    description: Longest wait for draining after the pool deletion,
                      measured from its deletionTimestamp.
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: must be a duration such as 0s, 90s, 15m or 1h30m
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) >= duration('0s')
                  policy:
                    default: Drain
                    description: 'Drain: deleting the pool waits for each cell GPU
                      Pods to end (up to drainTimeout). Force: cells go at once.'
                    enum:
                    - Drain
                    - Force
                    type: string
                type: object
              replicas:
                default: 1
                description: Number of cells (the scale subresource); with autoscaling,
                  the default floor.
                maximum: 100000
                minimum: 0
                type: integer
              updatePolicy:
                description: What a change of guestTemplate, gpu, nodeIPFrom or bootstrap.hostname
                  does to existing cells.
                properties:
                  type:
                    default: Manual
                    description: 'Manual: existing cells keep their template. RollingUpdate:
                      outdated cells drain and are rebuilt one at a time.'
                    enum:
                    - Manual
                    - RollingUpdate
                    type: string
                type: object
              workloadCluster:
                description: The cluster the cells join as nodes.
                properties:
                  key:
                    default: value
                    description: Key of the kubeconfig in that Secret.
                    maxLength: 253
                    type: string
                  kubeconfigSecretRef:
                    description: 'Secret with a kubeconfig for the workload cluster,
                      read by the workload agent. It must carry the label cells.kubeswift.io/workload-kubeconfig:
                      "true".'
                    properties:
                      name:
                        description: Name of the Secret, in the pool namespace.
                        maxLength: 253
                        type: string
                    required:
                    - name
                    type: object
                    x-kubernetes-map-type: atomic
                  node:
                    description: What each cell Node carries.
                    properties:
                      annotations:
                        additionalProperties:
                          type: string
                        description: Annotations of each cell Node, at most 64, set
                          by the workload agent after the Node joins.
                        maxProperties: 64
                        type: object
                      labels:
                        additionalProperties:
                          type: string
                        description: 'Labels of each cell Node, at most 64. Labels
                          a kubelet may set on itself are set at registration ({{
                          nodeLabels }}); the others (node-role.kubernetes.io/...)
                          by the workload agent after the Node joins. Refused: node-restriction.kubernetes.io/
                          labels, the control-plane and etcd roles (control-plane,
                          master, controlplane, etcd), and other kubernetes.io and
                          k8s.io labels NodeRestriction forbids a kubelet. Labels
                          and annotations together take at most 16 KiB.'
                        maxProperties: 64
                        type: object
                      taints:
                        description: 'Taints of each cell Node: at registration ({{
                          nodeTaints }}) and ensured by the workload agent. Refused:
                          node.kubernetes.io/ and node.cloudprovider.kubernetes.io/
                          taints and taints on the control-plane and etcd role keys.'
                        items:
                          description: A Node taint; taints are matched by key and
                            effect.
                          properties:
                            effect:
                              description: NoSchedule, PreferNoSchedule or NoExecute.
                              enum:
                              - NoSchedule
                              - PreferNoSchedule
                              - NoExecute
                              type: string
                            key:
                              description: The taint key.
                              minLength: 1
                              type: string
                            timeAdded:
                              description: Accepted for compatibility with gpucellpool
                                manifests (an RFC 3339 time); ignored.
                              type: string
                            value:
                              description: The taint value (may be empty).
                              type: string
                          required:
                          - key
                          - effect
                          type: object
                        maxItems: 64
                        type: array
                    type: object
                required:
                - kubeconfigSecretRef
                type: object
            required:
            - cell
            - workloadCluster
            type: object
            x-kubernetes-validations:
            - fieldPath: .cell.gpu.dra.resourceClaimName
              message: 'cell.gpu.dra.resourceClaimName backs one VM: only for a pool
                of at most one cell; use resourceClaimTemplateName'
              rule: '!has(self.cell.gpu.dra) || !has(self.cell.gpu.dra.resourceClaimName)
                || self.cell.gpu.dra.resourceClaimName == '''' || ((!has(self.replicas)
                || self.replicas <= 1) && (!has(self.autoscaling) || !has(self.autoscaling.enabled)
                || !self.autoscaling.enabled || !has(self.autoscaling.maxReplicas)
                || self.autoscaling.maxReplicas <= 1))'
          status:
            description: What the controller observed.
            properties:
              cellDeviceShape:
                description: The GPU of a Ready cell, remembered so a pool scaled
                  to zero can still judge demand.
                properties:
                  cores:
                    description: Compute of one cell GPU, percent (HAMi devcore).
                    type: integer
                  memoryMiB:
                    description: Device memory of one cell GPU, MiB.
                    type: integer
                  type:
                    description: The device type HAMi reported.
                    type: string
                required:
                - memoryMiB
                - cores
                type: object
              cells:
                description: One row per cell the pool owns.
                items:
                  description: One cell of the pool.
                  properties:
                    devices:
                      description: 'PCI addresses of the GPUs passed into the VM:
                        at most 16, each at most 253 characters.'
                      items:
                        type: string
                      type: array
                    failure:
                      description: Why a Failed cell failed.
                      properties:
                        message:
                          description: What failed, as it was observed when the cell
                            failed.
                          type: string
                        phase:
                          description: The phase the cell stayed in too long.
                          enum:
                          - Pending
                          - AllocatingGPU
                          - GuestProvisioning
                          - Booting
                          - Joining
                          - AwaitingGPUCapacity
                          - Ready
                          - Draining
                          - Deleting
                          - Failed
                          type: string
                        reason:
                          description: 'Why the cell failed: ReadyTimeout or CapacityTimeout
                            (a phase outlived its budget).'
                          type: string
                        since:
                          description: When the cell failed.
                          format: date-time
                          type: string
                      required:
                      - reason
                      - since
                      - message
                      type: object
                    failureCount:
                      description: Failures of this index since the spec last changed.
                      minimum: 0
                      type: integer
                    guestUID:
                      description: 'The uid of the SwiftGuest: this incarnation of
                        the cell.'
                      type: string
                    hostNode:
                      description: Infrastructure node whose GPU the cell holds; absent
                        when the guest reports a name past 253 characters.
                      type: string
                    index:
                      description: The cell index.
                      minimum: 0
                      type: integer
                    lastTransitionTime:
                      description: When the phase last changed.
                      format: date-time
                      type: string
                    message:
                      description: What a person should know about the cell; at most
                        1024 characters (clipped, ending in …).
                      type: string
                    name:
                      description: 'The cell name <pool>-<index>: also the SwiftGuest
                        name and the Node name.'
                      type: string
                    nodeIP:
                      description: 'The node address: the nodeIPFrom interface IP,
                        else the primary IP (an address past 64 characters is not
                        read).'
                      type: string
                    nodeName:
                      description: The cell Node in the workload cluster, once present.
                      type: string
                    phase:
                      description: Pending, AllocatingGPU, GuestProvisioning, Booting,
                        Joining, AwaitingGPUCapacity, Ready, Draining, Deleting or
                        Failed.
                      enum:
                      - Pending
                      - AllocatingGPU
                      - GuestProvisioning
                      - Booting
                      - Joining
                      - AwaitingGPUCapacity
                      - Ready
                      - Draining
                      - Deleting
                      - Failed
                      type: string
                    readyOnce:
                      description: The cell has been Ready since it was built; phase
                        budgets stop applying.
                      type: boolean
                    reason:
                      description: One CamelCase word on why the cell is in its phase;
                        at most 128 characters (clipped).
                      type: string
                    templateHash:
                      description: Hash of what the cell was built from (guestTemplate,
                        gpu, nodeIPFrom, hostname).
                      type: string
                  required:
                  - name
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              conditions:
                description: Ready, Progressing, Updated, WorkloadClusterReachable,
                  (autoscaling only) ScalingActive and PhysicalGPUsAvailable (free
                  physical GPUs for a scale-up).
                items:
                  description: A standard condition.
                  properties:
                    lastTransitionTime:
                      description: When status last changed.
                      format: date-time
                      type: string
                    message:
                      description: What a person should know or do.
                      type: string
                    observedGeneration:
                      description: The metadata.generation this condition describes.
                      type: integer
                    reason:
                      description: One CamelCase word a program can switch on.
                      type: string
                    status:
                      description: True, False or Unknown.
                      enum:
                      - "True"
                      - "False"
                      - Unknown
                      type: string
                    type:
                      description: Ready, Progressing, Updated, WorkloadClusterReachable,
                        ScalingActive or PhysicalGPUsAvailable.
                      type: string
                  required:
                  - type
                  - status
                  - reason
                  - message
                  - lastTransitionTime
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - type
                x-kubernetes-list-type: map
              creatingCells:
                description: Cells being created (Pending through AwaitingGPUCapacity,
                  before their first Ready).
                type: integer
              demand:
                description: 'The autoscaler input: demand in the workload cluster.'
                properties:
                  lastObserved:
                    description: When the workload agent read them.
                    format: date-time
                    type: string
                  pendingPods:
                    description: Pending GPU Pods that could run on a pool Node.
                    type: integer
                  satisfiable:
                    description: Of those, Pods one cell could run.
                    type: integer
                required:
                - pendingPods
                - satisfiable
                type: object
              demandFreeSince:
                description: Since when no satisfiable Pod has been pending.
                format: date-time
                type: string
              desiredReplicas:
                description: 'The size the pool is heading for: spec.replicas, or
                  the autoscaler decision.'
                type: integer
              drainingCells:
                description: Cells draining.
                type: integer
              failedCells:
                description: Cells in phase Failed.
                type: integer
              lastScaleDownTime:
                description: When the autoscaler last scaled down.
                format: date-time
                type: string
              lastScaleUpTime:
                description: When the autoscaler last scaled up.
                format: date-time
                type: string
              observedGeneration:
                description: The generation Metacontroller last synced.
                type: integer
              readyCells:
                description: Cells in phase Ready.
                type: integer
              replicas:
                description: Cells the pool owns (the scale subresource).
                type: integer
              selector:
                description: Label selector of the cells (cells.kubeswift.io/pool=<pool>),
                  for the scale subresource.
                type: string
            type: object
        required:
        - spec
        type: object
        x-kubernetes-validations:
        - message: a GPUCellPool name must be a DNS label of at most 57 characters
            (lower-case letters, digits and -, starting and ending with a letter or
            digit), so that its cell names <pool>-<index> stay Node names
          rule: size(self.metadata.name) <= 57 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
    served: true
    storage: true
    subresources:
      scale:
        labelSelectorPath: .status.selector
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
      status: {}
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: instanceactivities.worker.gpustack.ai
spec:
  group: worker.gpustack.ai
  names:
    categories:
    - gpustack
    kind: InstanceActivity
    listKind: InstanceActivityList
    plural: instanceactivities
    shortNames:
    - instact
    singular: instanceactivity
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: The Pod observed.
      jsonPath: .spec.podName
      name: Pod
      type: string
    - description: The last time an accelerator was above the threshold.
      jsonPath: .status.lastActiveTime
      name: Active
      type: date
    - description: The agent has a current observation.
      jsonPath: .status.conditions[?(@.type=="Observed")].status
      name: Observed
      type: string
    - description: 'Why the hook asks for a stop; empty: none.'
      jsonPath: .spec.stop.reason
      name: Stop
      type: string
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: An Instance's observed GPU activity and the stop its lifecycle
          asks for.
        properties:
          apiVersion:
            description: 'API group and version of this object: worker.gpustack.ai/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: InstanceActivity.'
            type: string
          metadata:
            type: object
          spec:
            description: Written by the Instance hook through Metacontroller only.
            properties:
              idleThreshold:
                description: Percent of GPU cores at or below which an accelerator
                  counts as idle (the type’s spec.lifecycle.idleThreshold).
                maximum: 100
                minimum: 0
                type: integer
              instanceUID:
                description: The uid of the Instance this object observes.
                maxLength: 128
                pattern: ^[A-Za-z0-9-]+$
                type: string
              noticeTime:
                description: 'When the hook first said the stop was scheduled (the
                  Instance''s condition StopScheduled True) for this Pod: no stop
                  is requested before stopNotice after it.'
                format: date-time
                type: string
              podName:
                description: The name of the Instance's Pod.
                maxLength: 253
                pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                type: string
              podUID:
                description: 'The uid of the Instance''s Pod: an observation or a
                  stop applies to this Pod only.'
                maxLength: 128
                pattern: ^[A-Za-z0-9-]+$
                type: string
              postponement:
                description: The Instance's postponement as the hook first saw it.
                properties:
                  firstObservedTime:
                    description: 'When the hook first saw this value: the postponement
                      holds at most maxPostpone after it.'
                    format: date-time
                    type: string
                  until:
                    description: The annotation gpustack.ai/keep-running-until as
                      parsed.
                    format: date-time
                    type: string
                required:
                - until
                - firstObservedTime
                type: object
              stop:
                description: Present once the hook has decided that the Instance stops.
                properties:
                  at:
                    description: When the stop became due.
                    format: date-time
                    type: string
                  reason:
                    description: Idle or MaxRunDuration.
                    enum:
                    - Idle
                    - MaxRunDuration
                    type: string
                  requested:
                    description: 'The hook asks the agent to stop the Instance (spec.stop:
                      true).'
                    type: boolean
                required:
                - requested
                - reason
                - at
                type: object
            required:
            - instanceUID
            - podName
            - podUID
            - idleThreshold
            type: object
          status:
            description: Written by the agent through the status subresource only.
            properties:
              conditions:
                description: Observed, the one condition.
                items:
                  description: A standard condition.
                  properties:
                    lastTransitionTime:
                      description: When status last changed.
                      format: date-time
                      type: string
                    message:
                      description: What a person should know or do.
                      type: string
                    observedGeneration:
                      description: The metadata.generation this condition describes.
                      type: integer
                    reason:
                      description: One CamelCase word a program can switch on.
                      type: string
                    status:
                      description: True, False or Unknown.
                      enum:
                      - "True"
                      - "False"
                      - Unknown
                      type: string
                    type:
                      description: 'Observed: the agent has a current observation
                        of the Instance.'
                      type: string
                  required:
                  - type
                  - status
                  - reason
                  - message
                  - lastTransitionTime
                  type: object
                maxItems: 8
                type: array
                x-kubernetes-list-map-keys:
                - type
                x-kubernetes-list-type: map
              lastActiveTime:
                description: The last time any accelerator of the Instance was above
                  the threshold.
                format: date-time
                type: string
              observedTime:
                description: When the agent last completed an observation.
                format: date-time
                type: string
              podUID:
                description: The Pod uid of the spec this observation was made for.
                maxLength: 128
                pattern: ^[A-Za-z0-9-]+$
                type: string
              roundSeconds:
                description: 'The agent''s round, seconds: an observation older than
                  three is stale.'
                maximum: 86400
                minimum: 1
                type: integer
              source:
                description: 'Where the observation came from: the query and the server.'
                maxLength: 1024
                type: string
            type: object
        type: object
    served: true
    storage: true
    subresources:
      status: {}
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: instances.worker.gpustack.ai
spec:
  group: worker.gpustack.ai
  names:
    categories:
    - gpustack
    kind: Instance
    listKind: InstanceList
    plural: instances
    shortNames:
    - inst
    singular: instance
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: The InstanceType.
      jsonPath: .spec.type
      name: Type
      type: string
    - description: Where the workspace is in its life.
      jsonPath: .status.phase
      name: Phase
      type: string
    - description: Allocated node ports, <port>:<nodePort>/<protocol>.
      jsonPath: .status.nodePorts
      name: Ports
      type: string
    - description: Node of the observed Pod.
      jsonPath: .status.nodeName
      name: Node
      type: string
    - description: The command that opens an SSH session while the Instance runs.
      jsonPath: .status.connect.ssh
      name: SSH
      type: string
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: A container workspace backed by a Pod with an accelerator, reached
          through a NodePort Service.
        properties:
          apiVersion:
            description: 'API group and version of this object: worker.gpustack.ai/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: Instance.'
            type: string
          metadata:
            type: object
          spec:
            description: The desired workspace.
            properties:
              args:
                description: Arguments to the entrypoint.
                items:
                  type: string
                type: array
              command:
                description: Entrypoint of the workload container; the image default
                  when absent.
                items:
                  type: string
                type: array
              env:
                description: Environment of the workload container, keyed by name.
                items:
                  description: An environment variable, as in a container.
                  properties:
                    name:
                      description: 'Variable name: printable ASCII characters other
                        than =.'
                      minLength: 1
                      pattern: ^[ -<>-~]+$
                      type: string
                    value:
                      description: Literal value.
                      type: string
                    valueFrom:
                      description: 'Source of the value, as in a container env entry:
                        exactly one of fieldRef, resourceFieldRef, configMapKeyRef,
                        secretKeyRef, fileKeyRef.'
                      properties:
                        configMapKeyRef:
                          description: A key of a ConfigMap.
                          properties:
                            key:
                              description: Key in the ConfigMap.
                              maxLength: 253
                              minLength: 1
                              pattern: ^[-._a-zA-Z0-9]+$
                              type: string
                            name:
                              description: Name of the ConfigMap in the Instance namespace.
                              maxLength: 253
                              pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                              type: string
                            optional:
                              description: 'true: the container starts without the
                                variable when the ConfigMap or key is missing.'
                              type: boolean
                          required:
                          - name
                          - key
                          type: object
                        fieldRef:
                          description: A field of the Pod.
                          properties:
                            apiVersion:
                              description: Version of the schema fieldPath is written
                                in; v1.
                              type: string
                            fieldPath:
                              description: 'A field of the Pod: metadata.name, metadata.namespace,
                                metadata.uid, metadata.labels[''<key>''], metadata.annotations[''<key>''],
                                spec.nodeName, spec.serviceAccountName, status.hostIP(s),
                                status.podIP(s).'
                              minLength: 1
                              type: string
                          required:
                          - fieldPath
                          type: object
                        fileKeyRef:
                          description: A variable of an env file in a volume (Kubernetes
                            1.35 and later).
                          properties:
                            key:
                              description: The variable in the file.
                              minLength: 1
                              pattern: ^[ -<>-~]+$
                              type: string
                            optional:
                              description: 'true: the container starts without the
                                variable when it is missing.'
                              type: boolean
                            path:
                              description: The env file, relative to the volume.
                              minLength: 1
                              type: string
                            volumeName:
                              description: An emptyDir volume of the Pod.
                              maxLength: 63
                              minLength: 1
                              pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
                              type: string
                          required:
                          - volumeName
                          - path
                          - key
                          type: object
                        resourceFieldRef:
                          description: A resource of a container.
                          properties:
                            containerName:
                              description: Container whose resource is read; the workload
                                container when absent.
                              type: string
                            divisor:
                              anyOf:
                              - type: integer
                              - type: string
                              description: Unit of the value; 1 when absent.
                              pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                              x-kubernetes-int-or-string: true
                            resource:
                              description: limits.cpu, limits.memory, limits.ephemeral-storage,
                                requests.cpu, requests.memory, requests.ephemeral-storage,
                                or a hugepages one.
                              minLength: 1
                              type: string
                          required:
                          - resource
                          type: object
                        secretKeyRef:
                          description: A key of a Secret.
                          properties:
                            key:
                              description: Key in the Secret.
                              maxLength: 253
                              minLength: 1
                              pattern: ^[-._a-zA-Z0-9]+$
                              type: string
                            name:
                              description: Name of the Secret in the Instance namespace.
                              maxLength: 253
                              pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                              type: string
                            optional:
                              description: 'true: the container starts without the
                                variable when the Secret or key is missing.'
                              type: boolean
                          required:
                          - name
                          - key
                          type: object
                      type: object
                      x-kubernetes-validations:
                      - message: set exactly one of fieldRef, resourceFieldRef, configMapKeyRef,
                          secretKeyRef and fileKeyRef
                        rule: '[has(self.fieldRef), has(self.resourceFieldRef), has(self.configMapKeyRef),
                          has(self.secretKeyRef), has(self.fileKeyRef)].filter(x,
                          x).size() == 1'
                  required:
                  - name
                  type: object
                  x-kubernetes-validations:
                  - message: value and valueFrom are exclusive
                    rule: '!(has(self.value) && has(self.valueFrom))'
                maxItems: 256
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              image:
                description: Workload container image.
                minLength: 1
                type: string
              imagePullPolicy:
                default: IfNotPresent
                description: When to pull image.
                enum:
                - Always
                - IfNotPresent
                - Never
                type: string
              imagePullSecrets:
                description: Secrets in the Instance namespace for pulling image.
                items:
                  properties:
                    name:
                      description: Secret name.
                      minLength: 1
                      type: string
                  required:
                  - name
                  type: object
                maxItems: 16
                type: array
                x-kubernetes-list-map-keys:
                - name
                x-kubernetes-list-type: map
              nodeName:
                description: Pin the Pod to this node, a Node name (a DNS subdomain),
                  as required node affinity (the scheduler and device plugins still
                  run).
                maxLength: 253
                minLength: 1
                pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                type: string
              ports:
                description: Ports exposed through the NodePort Service named after
                  the Instance. An unchanged (port, protocol) keeps its node port
                  across stop, edit and start; edits made while stopped apply at the
                  next start.
                items:
                  description: A port exposed through the Instance NodePort Service.
                  properties:
                    name:
                      description: Optional IANA service name (at most 15 lower-case
                        letters, digits and -, with a letter) for the container port
                        and the status entry. The Service port is always named <protocol>-<port>.
                        ssh is reserved for the SSH sidecar.
                      maxLength: 15
                      type: string
                      x-kubernetes-validations:
                      - message: 'must be an IANA service name: lower-case letters,
                          digits and -, with a letter, no -- and no - at either end'
                        rule: self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && self.matches('[a-z]')
                          && !self.contains('--')
                      - message: ssh is reserved for the SSH sidecar
                        rule: self != 'ssh'
                    port:
                      description: Port the workload listens on; also the Service
                        port.
                      maximum: 65535
                      minimum: 1
                      type: integer
                    protocol:
                      default: TCP
                      description: TCP (default), UDP or SCTP.
                      enum:
                      - TCP
                      - UDP
                      - SCTP
                      type: string
                  required:
                  - port
                  type: object
                maxItems: 32
                type: array
                x-kubernetes-list-map-keys:
                - port
                - protocol
                x-kubernetes-list-type: map
                x-kubernetes-validations:
                - message: two entries share a port number with different protocols;
                    the Service cannot carry both (use distinct port numbers)
                  rule: self.all(a, self.all(b, a.port != b.port || a.protocol ==
                    b.protocol))
                - message: port names must be unique
                  rule: self.all(a, !has(a.name) || self.exists_one(b, has(b.name)
                    && b.name == a.name))
              resources:
                description: Resources of the workload container.
                properties:
                  accelerator:
                    description: Accelerators for the workload container; absent means
                      a CPU-only workspace.
                    properties:
                      coresPercentage:
                        description: 'Sliced: share of compute in percent; absent
                          means 100.'
                        maximum: 100
                        minimum: 1
                        type: integer
                      count:
                        default: 1
                        description: Number of accelerators; 1 for Sliced and Partitioned.
                          0 means a CPU-only workspace.
                        minimum: 0
                        type: integer
                      family:
                        default: Whole
                        description: 'Whole: dedicated devices. Shared: time-sliced
                          devices. Sliced: a share of one device memory and compute
                          (HAMi, GPUStack). Partitioned: a hardware (MIG) partition
                          of one device.'
                        enum:
                        - Whole
                        - Shared
                        - Sliced
                        - Partitioned
                        type: string
                      memoryMiB:
                        description: 'Sliced: device memory in MiB (exclusive with
                          memoryPercentage).'
                        minimum: 1
                        type: integer
                      memoryPercentage:
                        description: 'Sliced: share of device memory in percent (exclusive
                          with memoryMiB).'
                        maximum: 100
                        minimum: 1
                        type: integer
                      profile:
                        description: 'Partitioned: the partition profile, one the
                          InstanceType offers, such as 1g.10gb.'
                        maxLength: 40
                        pattern: ^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$
                        type: string
                    type: object
                    x-kubernetes-validations:
                    - message: 'memoryMiB and memoryPercentage are exclusive: set
                        one'
                      rule: '!(has(self.memoryPercentage) && has(self.memoryMiB))'
                    - message: 'count 0 means a CPU-only workspace: no other accelerator
                        field may be set'
                      rule: '!has(self.count) || self.count != 0 || (!has(self.memoryPercentage)
                        && !has(self.memoryMiB) && !has(self.coresPercentage) && !has(self.profile)
                        && (!has(self.family) || self.family == ''Whole''))'
                    - message: Sliced and Partitioned take count 1
                      rule: '!has(self.family) || !(self.family in [''Sliced'', ''Partitioned''])
                        || !has(self.count) || self.count == 1'
                    - message: memoryMiB, memoryPercentage and coresPercentage apply
                        to the Sliced family only
                      rule: (has(self.family) && self.family == 'Sliced') || (!has(self.memoryPercentage)
                        && !has(self.memoryMiB) && !has(self.coresPercentage))
                    - message: Sliced needs memoryMiB or memoryPercentage
                      rule: '!has(self.family) || self.family != ''Sliced'' || has(self.memoryMiB)
                        || has(self.memoryPercentage)'
                    - message: profile is required for the Partitioned family and
                        allowed for it only
                      rule: (has(self.family) && self.family == 'Partitioned') ==
                        has(self.profile)
                  cpu:
                    anyOf:
                    - type: integer
                    - type: string
                    description: CPU of the workload container (requests = limits),
                      not negative; the InstanceType default when absent.
                    pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                    x-kubernetes-int-or-string: true
                    x-kubernetes-validations:
                    - message: must not be negative
                      rule: 'type(self) == int ? self >= 0 : (!isQuantity(self) ||
                        !quantity(self).isLessThan(quantity(''0'')))'
                  memory:
                    anyOf:
                    - type: integer
                    - type: string
                    description: Memory of the workload container (requests = limits),
                      not negative; the InstanceType default when absent.
                    pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                    x-kubernetes-int-or-string: true
                    x-kubernetes-validations:
                    - message: must not be negative
                      rule: 'type(self) == int ? self >= 0 : (!isQuantity(self) ||
                        !quantity(self).isLessThan(quantity(''0'')))'
                type: object
              sshPublicKey:
                description: Secret in the Instance namespace with key authorized_keys.
                  When set, an SSH sidecar on 22/TCP (Service port ssh) lets those
                  keys enter the workload container.
                properties:
                  name:
                    description: Secret name.
                    maxLength: 253
                    minLength: 1
                    type: string
                required:
                - name
                type: object
              stop:
                default: false
                description: 'true: no Pod; the Service and its node ports stay. false:
                  run.'
                type: boolean
              type:
                description: 'Name of the InstanceType: decides node placement and
                  how accelerators are requested. At most 63 characters: the Pod carries
                  it as a label value.'
                maxLength: 63
                minLength: 1
                type: string
              workspace:
                description: 'The workspace volume: ephemeral (emptyDir) unless claimName
                  names an existing claim or persistent asks for a claim of its own;
                  size, claimName and persistent are exclusive.'
                properties:
                  claimName:
                    description: Existing PersistentVolumeClaim to mount instead of
                      an ephemeral workspace.
                    maxLength: 253
                    minLength: 1
                    type: string
                  mountPath:
                    default: /workspace
                    description: Absolute path of the workspace volume in the workload
                      container.
                    pattern: ^/
                    type: string
                  persistent:
                    description: A PersistentVolumeClaim of the Instance, <instance>-workspace,
                      kept while the Instance exists.
                    properties:
                      size:
                        anyOf:
                        - type: integer
                        - type: string
                        description: Storage the claim requests, above zero; may grow
                          (the claim is updated in place), never shrink.
                        pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                        x-kubernetes-int-or-string: true
                        x-kubernetes-validations:
                        - message: must be above zero
                          rule: 'type(self) == int ? self > 0 : (!isQuantity(self)
                            || quantity(string(self)).isGreaterThan(quantity(''0'')))'
                      storageClassName:
                        description: 'StorageClass of the claim; absent: the cluster''s
                          default class. Cannot change.'
                        maxLength: 253
                        minLength: 1
                        pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                        type: string
                    required:
                    - size
                    type: object
                    x-kubernetes-validations:
                    - fieldPath: .size
                      message: 'spec.workspace.persistent.size may only grow: a PersistentVolumeClaim
                        cannot shrink (delete the Instance to start over)'
                      rule: '!isQuantity(string(self.size)) || !isQuantity(string(oldSelf.size))
                        || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size)))
                        >= 0'
                    - fieldPath: .storageClassName
                      message: 'spec.workspace.persistent.storageClassName cannot
                        change: the claim keeps the class it was made with'
                      rule: has(self.storageClassName) == has(oldSelf.storageClassName)
                        && (!has(self.storageClassName) || self.storageClassName ==
                        oldSelf.storageClassName)
                  size:
                    anyOf:
                    - type: integer
                    - type: string
                    description: Size limit of an ephemeral (emptyDir) workspace,
                      not negative.
                    pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                    x-kubernetes-int-or-string: true
                    x-kubernetes-validations:
                    - message: must not be negative
                      rule: 'type(self) == int ? self >= 0 : (!isQuantity(self) ||
                        !quantity(self).isLessThan(quantity(''0'')))'
                type: object
                x-kubernetes-validations:
                - message: 'size and claimName are exclusive: an ephemeral size or
                    a claim'
                  rule: '!(has(self.size) && has(self.claimName))'
                - fieldPath: .persistent
                  message: 'persistent and size are exclusive: a persistent workspace
                    takes its size in persistent.size'
                  rule: '!(has(self.persistent) && has(self.size))'
                - fieldPath: .persistent
                  message: 'persistent and claimName are exclusive: a claim of its
                    own or an existing claim'
                  rule: '!(has(self.persistent) && has(self.claimName))'
            required:
            - type
            - image
            type: object
            x-kubernetes-validations:
            - fieldPath: .ports
              message: 'with sshPublicKey set, port 22 is the SSH port: only 22/TCP
                may be listed'
              rule: '!has(self.sshPublicKey) || !has(self.ports) || self.ports.all(p,
                p.port != 22 || p.protocol == ''TCP'')'
            - fieldPath: .workspace
              message: 'spec.workspace.persistent cannot be removed: the claim holds
                the workspace files (delete the Instance to delete its claim)'
              rule: '!has(oldSelf.workspace) || !has(oldSelf.workspace.persistent)
                || (has(self.workspace) && has(self.workspace.persistent))'
          status:
            description: What the controller observed.
            properties:
              accelerator:
                description: What the observed Pod requests for the workload container.
                properties:
                  claim:
                    description: 'With a DRA InstanceType: the Pod''s ResourceClaim,
                      made from the Instance''s ResourceClaimTemplate (kubectl get
                      resourceclaim <claim> shows the allocated devices).'
                    type: string
                  count:
                    description: Number of accelerators.
                    type: integer
                  family:
                    description: The accelerator family.
                    type: string
                  resources:
                    additionalProperties:
                      type: string
                    description: Extended resources requested by the main container.
                    type: object
                required:
                - family
                - count
                - resources
                type: object
              accessAddresses:
                description: <hostIP>:<nodePort> per port while a Pod runs (externalTrafficPolicy
                  Local).
                items:
                  type: string
                type: array
              conditions:
                description: Ready, SpecValid and UpToDate; with a queued InstanceType,
                  Admitted, and Evicted once Kueue evicted its Pod; with a lifecycle,
                  StopScheduled.
                items:
                  description: A standard condition.
                  properties:
                    lastTransitionTime:
                      description: When status last changed.
                      format: date-time
                      type: string
                    message:
                      description: What a person should know or do.
                      type: string
                    observedGeneration:
                      description: The metadata.generation this condition describes.
                      type: integer
                    reason:
                      description: One CamelCase word a program can switch on.
                      type: string
                    status:
                      description: True, False or Unknown.
                      enum:
                      - "True"
                      - "False"
                      - Unknown
                      type: string
                    type:
                      description: Ready, SpecValid, UpToDate, Admitted, Evicted or
                        StopScheduled.
                      type: string
                  required:
                  - type
                  - status
                  - reason
                  - message
                  - lastTransitionTime
                  type: object
                type: array
                x-kubernetes-list-map-keys:
                - type
                x-kubernetes-list-type: map
              connect:
                description: How to reach the running Instance; present in phase Running
                  only.
                properties:
                  address:
                    description: 'The host users reach the Instance at: the Setting
                      instance-access-address when set, else the Pod''s host IP (an
                      IP address, IPv6 without brackets, or a DNS name).'
                    type: string
                  message:
                    description: Why no address is given although the Pod runs (the
                      Setting instance-access-address is unusable).
                    type: string
                  ports:
                    description: One entry per spec port with an allocated node port,
                      in the Service's order.
                    items:
                      properties:
                        endpoint:
                          description: <address>:<nodePort>, an IPv6 address in brackets.
                          type: string
                        name:
                          description: The spec port name, or <protocol>-<port>.
                          type: string
                        port:
                          description: The spec port (the container and Service port).
                          type: integer
                        protocol:
                          description: TCP, UDP or SCTP.
                          type: string
                      required:
                      - name
                      - port
                      - protocol
                      - endpoint
                      type: object
                    type: array
                  ssh:
                    description: The command that opens an SSH session (ssh -p <ssh
                      node port> root@<address>), while the Pod runs and spec.sshPublicKey
                      is set.
                    type: string
                type: object
              hostIP:
                description: IP of the node hosting the observed Pod.
                type: string
              lifecycle:
                description: When the Instance stops under its InstanceType's spec.lifecycle
                  (docs/lifecycle.md).
                properties:
                  idleSince:
                    description: Since when no GPU activity was observed (the Pod's
                      start at the earliest).
                    format: date-time
                    type: string
                  postponedUntil:
                    description: The postponement of an idle stop in force (gpustack.ai/keep-running-until,
                      clamped to maxPostpone).
                    format: date-time
                    type: string
                  stopAt:
                    description: When the Instance is stopped, as things stand.
                    format: date-time
                    type: string
                  stopReason:
                    description: Why it stops at stopAt.
                    enum:
                    - Idle
                    - MaxRunDuration
                    type: string
                  stopRequested:
                    description: The stop is due and was handed to the agent.
                    type: boolean
                  stoppedBy:
                    description: 'While spec.stop is true: the Instance was stopped
                      by its lifecycle (annotation gpustack.ai/stopped-by).'
                    properties:
                      at:
                        description: When.
                        format: date-time
                        type: string
                      reason:
                        description: Why the lifecycle stopped it.
                        enum:
                        - Idle
                        - MaxRunDuration
                        type: string
                    required:
                    - reason
                    - at
                    type: object
                type: object
              message:
                description: One sentence about the phase.
                type: string
              nodeName:
                description: Node of the observed Pod.
                type: string
              nodePorts:
                description: 'Every allocated node port as <port>:<nodePort>/<protocol>,
                  comma-separated (8888:31000/TCP,22:31022/TCP): status.ports on one
                  line, for the Ports column of kubectl get.'
                type: string
              observedGeneration:
                description: The generation Metacontroller last synced.
                type: integer
              phase:
                description: Pending, Queued (its Pod waits for quota in a Kueue LocalQueue),
                  Starting, Running, Stopping, Stopped, Failed or Deleting.
                enum:
                - Pending
                - Queued
                - Starting
                - Running
                - Stopping
                - Stopped
                - Failed
                - Deleting
                type: string
              podIP:
                description: IP of the observed Pod.
                type: string
              podName:
                description: The observed Pod.
                type: string
              ports:
                description: Ports of the observed Service with their node ports.
                items:
                  properties:
                    name:
                      description: The spec port name, or <protocol>-<port>, or ssh.
                      type: string
                    nodePort:
                      description: The node port allocated on the observed Service.
                      type: integer
                    port:
                      description: The Service port.
                      type: integer
                    protocol:
                      description: TCP, UDP or SCTP.
                      type: string
                  required:
                  - name
                  - port
                  - protocol
                  type: object
                type: array
              workspace:
                description: 'With spec.workspace.persistent: the observed claim.'
                properties:
                  capacity:
                    description: The storage of the bound volume, as the claim reports
                      it.
                    type: string
                  claimName:
                    description: The PersistentVolumeClaim of the workspace, <instance>-workspace.
                    type: string
                  message:
                    description: Why the claim waits, or why it differs from spec.workspace.persistent.
                    type: string
                  phase:
                    description: 'The claim''s phase: Pending, Bound or Lost.'
                    type: string
                  requested:
                    description: The storage the claim requests.
                    type: string
                  storageClassName:
                    description: The claim's StorageClass.
                    type: string
                required:
                - claimName
                type: object
            type: object
        required:
        - spec
        type: object
        x-kubernetes-validations:
        - message: 'an Instance name must be a DNS-1035 label: at most 63 lower-case
            letters, digits and -, starting with a letter and ending with a letter
            or digit (it names the Pod label and the Service)'
          rule: size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')
    served: true
    storage: true
    subresources:
      status: {}
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: instancetypes.worker.gpustack.ai
spec:
  group: worker.gpustack.ai
  names:
    categories:
    - gpustack
    kind: InstanceType
    listKind: InstanceTypeList
    plural: instancetypes
    singular: instancetype
  scope: Cluster
  versions:
  - additionalPrinterColumns:
    - description: Device plugin on the nodes of this type.
      jsonPath: .spec.devicePlugin
      name: Plugin
      type: string
    - description: Accelerator families Instances of this type may use.
      jsonPath: .spec.families
      name: Families
      type: string
    - description: 'The namespaces that may use this type, by their labels; empty:
        every namespace.'
      jsonPath: .spec.access.namespaceSelector
      name: Access
      type: string
    - description: 'The Kueue LocalQueue the Pods of this type join; empty: none.'
      jsonPath: .spec.queue.localQueueName
      name: Queue
      type: string
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: A class of GPU nodes that Instances can be placed on.
        properties:
          apiVersion:
            description: 'API group and version of this object: worker.gpustack.ai/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: InstanceType.'
            type: string
          metadata:
            type: object
          spec:
            description: What the admin offers on this class of nodes.
            properties:
              access:
                description: 'Which namespaces may use this type; absent: every namespace.'
                properties:
                  namespaceSelector:
                    description: 'The namespaces whose Instances may use this type,
                      by the namespace''s labels; absent or empty: every namespace.'
                    properties:
                      matchExpressions:
                        description: Requirements that must all hold.
                        items:
                          description: A requirement on one label.
                          properties:
                            key:
                              description: The label key.
                              maxLength: 317
                              type: string
                              x-kubernetes-validations:
                              - message: must be a label key (a qualified name)
                                rule: self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
                                  && size(self.split('/')[size(self.split('/')) -
                                  1]) <= 63 && size(self) <= 317
                            operator:
                              description: In, NotIn, Exists or DoesNotExist.
                              enum:
                              - In
                              - NotIn
                              - Exists
                              - DoesNotExist
                              type: string
                            values:
                              description: The values, for In and NotIn (at least
                                one); empty for Exists and DoesNotExist.
                              items:
                                maxLength: 63
                                pattern: ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$
                                type: string
                              maxItems: 64
                              type: array
                          required:
                          - key
                          - operator
                          type: object
                          x-kubernetes-validations:
                          - fieldPath: .values
                            message: In and NotIn need at least one value; Exists
                              and DoesNotExist take none
                            rule: 'self.operator in [''In'', ''NotIn''] ? has(self.values)
                              && size(self.values) > 0 : !has(self.values) || size(self.values)
                              == 0'
                        maxItems: 32
                        type: array
                      matchLabels:
                        additionalProperties:
                          maxLength: 63
                          pattern: ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$
                          type: string
                        description: Labels that must all be present with these values.
                        maxProperties: 64
                        type: object
                        x-kubernetes-validations:
                        - message: every key must be a label key (a qualified name)
                          rule: self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
                            && size(k.split('/')[size(k.split('/')) - 1]) <= 63 &&
                            size(k) <= 317)
                    type: object
                type: object
              defaults:
                description: Resources for Instances that set none.
                properties:
                  cpu:
                    anyOf:
                    - type: integer
                    - type: string
                    description: CPU of an Instance that sets none (requests = limits).
                    pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                    x-kubernetes-int-or-string: true
                  memory:
                    anyOf:
                    - type: integer
                    - type: string
                    description: Memory of an Instance that sets none (requests =
                      limits).
                    pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                    x-kubernetes-int-or-string: true
                type: object
              devicePlugin:
                default: HAMi
                description: 'Device plugin on the nodes of this type, which decides
                  the resource names requested: HAMi, GPUStack or NVIDIA (the NVIDIA
                  device plugin offers no Sliced family); or DRA, a ResourceClaimTemplate
                  per Instance on the DeviceClasses of spec.dra.'
                enum:
                - HAMi
                - GPUStack
                - NVIDIA
                - DRA
                type: string
              dra:
                description: 'With devicePlugin DRA: the DeviceClasses each family
                  is allocated from.'
                properties:
                  deviceClassName:
                    description: DeviceClass of whole devices, for the Whole and Shared
                      families (gpu.nvidia.com for NVIDIA's DRA driver, hami-core-gpu.project-hami.io
                      for HAMi's).
                    maxLength: 253
                    pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                    type: string
                  partitionDeviceClassName:
                    description: DeviceClass of MIG devices, for the Partitioned family
                      (mig.nvidia.com for NVIDIA's DRA driver).
                    maxLength: 253
                    pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                    type: string
                  sharedDeviceClassName:
                    description: DeviceClass of devices with consumable capacity (cores,
                      memory), for the Sliced family (hami-core-gpu.project-hami.io
                      for HAMi's DRA driver).
                    maxLength: 253
                    pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                    type: string
                  sharing:
                    default: TimeSlicing
                    description: 'Sharing strategy of the Shared family in NVIDIA''s
                      GpuConfig: TimeSlicing or MPS.'
                    enum:
                    - TimeSlicing
                    - MPS
                    type: string
                type: object
              families:
                default:
                - Whole
                description: 'Accelerator families Instances of this type may use:
                  Whole, Shared, Sliced, Partitioned.'
                items:
                  enum:
                  - Whole
                  - Shared
                  - Sliced
                  - Partitioned
                  type: string
                minItems: 1
                type: array
                x-kubernetes-list-type: set
              lifecycle:
                description: 'Idle stop and maximum run time (docs/lifecycle.md):
                  with it, every running Instance of this type has an InstanceActivity
                  the agent fills from Prometheus, and its status says when it stops.'
                properties:
                  idleStopAfter:
                    description: 'No GPU activity above idleThreshold for this long
                      stops the Instance (spec.stop: true); absent: never for idleness.'
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: spec.lifecycle.idleStopAfter must be a positive duration
                        such as 90s, 15m or 2h
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) > duration('0s')
                  idleThreshold:
                    default: 5
                    description: Percent of GPU cores at or below which an accelerator
                      counts as idle.
                    maximum: 100
                    minimum: 0
                    type: integer
                  maxPostpone:
                    default: 8h
                    description: 'The furthest the annotation gpustack.ai/keep-running-until
                      may postpone an idle stop, from when it is first seen; 0: not
                      at all.'
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: spec.lifecycle.maxPostpone must be a duration such
                        as 0s, 90s, 15m or 8h
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) >= duration('0s')
                  maxRunDuration:
                    description: 'The Instance is stopped this long after its Pod
                      started, whatever it does; absent: never. Not postponable.'
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: spec.lifecycle.maxRunDuration must be a positive duration
                        such as 90s, 15m or 2h
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) > duration('0s')
                  stopNotice:
                    default: 15m
                    description: How long before a stop the Instance's condition StopScheduled
                      says when it stops; no stop comes sooner after it first says
                      so.
                    maxLength: 64
                    type: string
                    x-kubernetes-validations:
                    - message: spec.lifecycle.stopNotice must be a duration such as
                        0s, 90s, 15m or 8h
                      rule: self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')
                        && duration(self) >= duration('0s')
                type: object
              manufacturer:
                default: nvidia
                description: Accelerator manufacturer, used in the GPUStack visibility
                  resource name.
                maxLength: 63
                pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
                type: string
              maxCount:
                description: Most accelerators one Instance of this type may take;
                  absent means no limit.
                minimum: 1
                type: integer
              nodeSelector:
                additionalProperties:
                  type: string
                description: Node labels an Instance Pod of this type must match.
                type: object
              partitionProfiles:
                description: Hardware partition (MIG) profiles offered to Partitioned
                  Instances, such as 1g.10gb.
                items:
                  maxLength: 40
                  pattern: ^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$
                  type: string
                maxItems: 64
                type: array
                x-kubernetes-list-type: set
              queue:
                description: 'Quota and queueing by Kueue: the Pods of this type''s
                  Instances wait in a LocalQueue until Kueue admits them.'
                properties:
                  localQueueName:
                    description: 'Kueue LocalQueue, by name, in each Instance''s namespace,
                      that the Instance''s Pod joins (label kueue.x-k8s.io/queue-name):
                      a DNS subdomain of at most 63 characters, as a label value must
                      be.'
                    maxLength: 63
                    pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                    type: string
                  workloadPriorityClassName:
                    description: Kueue WorkloadPriorityClass of the Pod's Workload
                      (label kueue.x-k8s.io/priority-class).
                    maxLength: 63
                    pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
                    type: string
                required:
                - localQueueName
                type: object
              resourceName:
                default: nvidia.com/gpu
                description: The whole-accelerator extended resource name; the other
                  names derive from it and from its domain part (nvidia.com/gpu →
                  nvidia.com/gpumem, nvidia.com/gpu.shared).
                maxLength: 253
                pattern: ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$
                type: string
              runtimeClassName:
                description: RuntimeClass of the Instance Pods (for example nvidia).
                maxLength: 253
                type: string
              tolerations:
                description: Tolerations copied onto every Instance Pod of this type.
                items:
                  description: A toleration copied onto the Pod of every Instance
                    of this type.
                  properties:
                    effect:
                      description: Taint effect to match; empty matches every effect.
                      enum:
                      - NoSchedule
                      - PreferNoSchedule
                      - NoExecute
                      type: string
                    key:
                      description: Taint key the toleration applies to; empty with
                        operator Exists matches every taint.
                      type: string
                    operator:
                      description: Exists or Equal (the default when absent).
                      enum:
                      - Exists
                      - Equal
                      type: string
                    tolerationSeconds:
                      description: 'For NoExecute: how long the Pod stays bound after
                        the taint appears.'
                      type: integer
                    value:
                      description: Taint value to match with operator Equal.
                      type: string
                  type: object
                maxItems: 64
                type: array
              visibilityResource:
                description: 'Overrides the resource the SSH sidecar requests to see
                  the workload''s devices without taking capacity; empty uses the
                  device plugin default (GPUStack: device.gpustack.ai/<manufacturer>.visibility).'
                maxLength: 253
                pattern: ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$
                type: string
            type: object
            x-kubernetes-validations:
            - fieldPath: .partitionProfiles
              message: spec.partitionProfiles needs Partitioned in spec.families
              rule: '!has(self.partitionProfiles) || size(self.partitionProfiles)
                == 0 || (has(self.families) && ''Partitioned'' in self.families)'
        required:
        - spec
        type: object
    served: true
    storage: true
---
# Source: gpuhooks/templates/crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    helm.sh/resource-policy: keep
  labels:
    app.kubernetes.io/part-of: gpuhooks
  name: settings.gpustack.ai
spec:
  group: gpustack.ai
  names:
    categories:
    - gpustack
    kind: Setting
    listKind: SettingList
    plural: settings
    shortNames:
    - set
    singular: setting
  scope: Cluster
  versions:
  - additionalPrinterColumns:
    - description: The value of the setting.
      jsonPath: .value
      name: Value
      type: string
    - description: Time since the object was created.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1alpha1
    schema:
      openAPIV3Schema:
        description: A cluster-wide gpuhooks setting. One object per setting, named
          after it; its value is the top-level field value.
        properties:
          apiVersion:
            description: 'API group and version of this object: gpustack.ai/v1alpha1.'
            type: string
          kind:
            description: 'Kind of this object: Setting.'
            type: string
          metadata:
            type: object
          value:
            description: 'The value of the setting named by metadata.name. instance-isolation-pod-cidrs:
              comma-separated IPv4/IPv6 pod CIDRs in canonical form (10.244.0.0/16,fd00:10:244::/56);
              blank turns tenant isolation off. instance-ssh-server-image: image of
              the Instance SSH sidecar; blank uses the published default. Running
              Instances pick a changed value up at their next start. instance-access-address:
              the IP address or DNS name users reach Instances at (a load balancer
              or NAT in front of the nodes), shown in each running Instance''s status.connect;
              blank uses the Pod''s host IP.'
            maxLength: 4096
            type: string
        type: object
        x-kubernetes-validations:
        - fieldPath: .value
          message: value of instance-isolation-pod-cidrs must be comma-separated canonical
            CIDRs with a prefix length above 0 and host bits zero, e.g. 10.244.0.0/16,fd00:10:244::/56
          rule: self.metadata.name != 'instance-isolation-pod-cidrs' || !has(self.value)
            || self.value.trim() == '' || self.value.split(',').all(c, isCIDR(c.trim())
            && cidr(c.trim()).prefixLength() > 0 && string(cidr(c.trim()).masked())
            == c.trim())
        - fieldPath: .value
          message: value of instance-access-address must be an IP address (IPv6 without
            brackets, no zone) or a lower-case DNS name (labels of letters, digits
            and -, at most 253 characters), e.g. 203.0.113.10 or gpu.example.com
          rule: self.metadata.name != 'instance-access-address' || !has(self.value)
            || self.value.trim() == '' || isIP(self.value.trim()) || (size(self.value.trim())
            <= 253 && self.value.trim().matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
            && !self.value.trim().matches('^[0-9.]+$') && self.value.trim().split('.').all(l,
            size(l) <= 63))
    served: true
    storage: true
---
# Source: gpuhooks/templates/agent.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuhooks-agent
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
rules:
  - apiGroups: [cells.kubeswift.io]
    resources: [cellnodesets]
    # patch: its finalizer cells.kubeswift.io/workload-nodes
    verbs: [get, list, watch, patch]
  - apiGroups: [cells.kubeswift.io]
    resources: [cellnodesets/status]
    verbs: [update, patch]
  # The owner check: a CellNodeSet is served only when its controller is a GPUCellPool of the same uid.
  - apiGroups: [cells.kubeswift.io]
    resources: [gpucellpools]
    verbs: [get, list, watch]
  # Events (core/v1): the story of each pool, and a Warning when a deleted CellNodeSet leaves
  # Nodes behind; an Instance's IdleStopped; patch counts an Event that happens again on the one
  # already written.
  - apiGroups: [""]
    resources: [events]
    verbs: [create, patch]
  # Cluster API cells (CellInfrastructure): the KubeSwiftMachines and bootstrap configs the pools'
  # Machines reference, created once, and the Machines' deletion hooks removed on release.
  - apiGroups: [cells.kubeswift.io]
    resources: [cellinfrastructures]
    verbs: [get, list, watch]
  - apiGroups: [cells.kubeswift.io]
    resources: [cellinfrastructures/status]
    verbs: [update, patch]
  # DRA pools: the physical GPUs (ResourceSlices, ResourceClaims of every namespace), summarized
  # per pool into its CellNodeSet status; read only.
  - apiGroups: [resource.k8s.io]
    resources: [resourceslices, resourceclaims]
    verbs: [get, list, watch]
  # Instances (docs/workload.md, "Instance activity"): observe InstanceActivities and write their
  # status; carry out a stop the Instance hook requests: read the Instance and its Pod by name,
  # patch the Instance (spec.stop and gpustack.ai/stopped-by only: ValidatingAdmissionPolicy
  # gpuhooks-agent-instance-stop).
  - apiGroups: [worker.gpustack.ai]
    resources: [instanceactivities]
    verbs: [get, list, watch]
  - apiGroups: [worker.gpustack.ai]
    resources: [instanceactivities/status]
    verbs: [patch]
  - apiGroups: [worker.gpustack.ai]
    resources: [instances]
    verbs: [get, patch]
  - apiGroups: [""]
    resources: [pods]
    verbs: [get]
  - apiGroups: [cluster.x-k8s.io]
    resources: [machines]
    verbs: [get, patch]
  - apiGroups: [infrastructure.cluster.x-k8s.io]
    resources: [kubeswiftmachines]
    verbs: [get, create]
  - apiGroups: [bootstrap.cluster.x-k8s.io]
    resources: [kubeadmconfigs]
    verbs: [get, create]
  - apiGroups: [bootstrap.cluster.x-k8s.io]
    resources: [kubeadmconfigtemplates]
    verbs: [get]
---
# Source: gpuhooks/templates/agent.yaml
# The kubeconfig Secrets of the workload clusters: each pass reads the one its CellNodeSet names,
# by name, so no list or watch (docs/workload.md, step 0).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuhooks-agent-secrets
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get]
---
# Source: gpuhooks/templates/certs.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuhooks-certs
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
rules:
  - apiGroups: [admissionregistration.k8s.io]
    resources: [validatingwebhookconfigurations]
    resourceNames: ["gpuhooks-instance","gpuhooks-cellpool"]
    verbs: [get, update]
---
# Source: gpuhooks/templates/user-roles.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuhooks-view
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
  - apiGroups: [worker.gpustack.ai]
    resources: [instances, instances/status, instancetypes, instanceactivities, instanceactivities/status]
    verbs: [get, list, watch]
  - apiGroups: [cells.kubeswift.io]
    resources: [cellnodesets, cellnodesets/status, gpucellpools, gpucellpools/status]
    verbs: [get, list, watch]
---
# Source: gpuhooks/templates/user-roles.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuhooks-edit
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
  - apiGroups: [worker.gpustack.ai]
    resources: [instances]
    verbs: [create, update, patch, delete, deletecollection]
---
# Source: gpuhooks/templates/user-roles.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuhooks-cellpool-edit
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
rules:
  - apiGroups: [cells.kubeswift.io]
    resources: [gpucellpools]
    verbs: [get, list, watch, create, update, patch, delete, deletecollection]
  - apiGroups: [cells.kubeswift.io]
    resources: [gpucellpools/status, cellnodesets, cellnodesets/status]
    verbs: [get, list, watch]
---
# Source: gpuhooks/templates/agent.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gpuhooks-agent
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: gpuhooks-agent
subjects:
  - kind: ServiceAccount
    name: gpuhooks-agent
    namespace: gpuhooks-system
---
# Source: gpuhooks/templates/agent.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gpuhooks-agent-secrets
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: gpuhooks-agent-secrets
subjects:
  - kind: ServiceAccount
    name: gpuhooks-agent
    namespace: gpuhooks-system
---
# Source: gpuhooks/templates/certs.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gpuhooks-certs
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: gpuhooks-certs
subjects:
  - kind: ServiceAccount
    name: gpuhooks-certs
    namespace: gpuhooks-system
---
# Source: gpuhooks/templates/agent.yaml
# Leader election: the Lease LEASE_NAME in this namespace (read, created, replaced).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: gpuhooks-agent-leader
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    resourceNames: [gpuhooks-agent]
    verbs: [get, update]
  # Create cannot be limited by name in Kubernetes RBAC.
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [create]
---
# Source: gpuhooks/templates/certs.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: gpuhooks-certs
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
rules:
  # create cannot be limited to a name; get and update are.
  - apiGroups: [""]
    resources: [secrets]
    verbs: [create]
  - apiGroups: [""]
    resources: [secrets]
    resourceNames: [gpuhooks-webhook-tls]
    verbs: [get, update]
  # A renewed certificate restarts the hook Pods, which read it at start.
  - apiGroups: [apps]
    resources: [deployments]
    resourceNames: [gpuhooks]
    verbs: [get, patch]
---
# Source: gpuhooks/templates/agent.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: gpuhooks-agent-leader
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: gpuhooks-agent-leader
subjects:
  - kind: ServiceAccount
    name: gpuhooks-agent
    namespace: gpuhooks-system
---
# Source: gpuhooks/templates/certs.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: gpuhooks-certs
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: gpuhooks-certs
subjects:
  - kind: ServiceAccount
    name: gpuhooks-certs
    namespace: gpuhooks-system
---
# Source: gpuhooks/templates/hooks.yaml
apiVersion: v1
kind: Service
metadata:
  name: gpuhooks
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: hooks
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/component: hooks
  ports:
    - {name: http, port: 80, targetPort: http, protocol: TCP}
    - {name: webhook, port: 443, targetPort: webhook, protocol: TCP}
---
# Source: gpuhooks/templates/agent.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpuhooks-agent
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: agent
spec:
  replicas: 2
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: gpuhooks
      app.kubernetes.io/instance: gpuhooks
      app.kubernetes.io/component: agent
  template:
    metadata:
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/component: agent
    spec:
      serviceAccountName: gpuhooks-agent
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        fsGroup: 1000
        seccompProfile:
          type: RuntimeDefault
      terminationGracePeriodSeconds: 30
      containers:
        - name: agent
          image: ghcr.io/gpustack/gpuhooks:0.1.0
          imagePullPolicy: IfNotPresent
          command: ["node", "dist/hooks/agent/main.js"]
          env:
            - {name: PORT, value: "8081"}
            - {name: LOG_LEVEL, value: "info"}
            - {name: WATCH_NAMESPACE, value: ""}
            - {name: RESYNC_SECONDS, value: "15"}
            - {name: AGENT_PASS_TIMEOUT_SECONDS, value: "60"}
            - {name: AGENT_PASS_WORKERS, value: "4"}
            - {name: AGENT_NAMESPACE_PASS_WORKERS, value: "2"}
            - {name: AGENT_MAX_ANSWER_BYTES, value: "8388608"}
            - {name: AGENT_MAX_PASS_BYTES, value: "16777216"}
            - {name: AGENT_MAX_PENDING_PODS, value: "5000"}
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - {name: LEASE_NAME, value: "gpuhooks-agent"}
            - {name: PROMETHEUS_URL, value: ""}
            - {name: ACTIVITY_STOPS, value: "true"}
            - {name: ACTIVITY_ROUND_SECONDS, value: "60"}
            - {name: ACTIVITY_STATUS_REFRESH_SECONDS, value: "300"}
            # The Lease's namespace: the Pod's own, where the Role above grants Leases.
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
          ports:
            - {name: http, containerPort: 8081, protocol: TCP}
          livenessProbe:
            httpGet: {path: /healthz, port: http}
            periodSeconds: 10
            failureThreshold: 3
            timeoutSeconds: 5
          # Ready means healthy and able to serve if elected (informers synced), leader or not:
          # the standby is ready too, so both replicas become available and helm --wait ends.
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            periodSeconds: 10
          resources:
            limits:
              memory: 384Mi
            requests:
              cpu: 50m
              memory: 128Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            runAsUser: 1000
            runAsGroup: 1000
            capabilities:
              drop: [ALL]
            seccompProfile:
              type: RuntimeDefault
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
      volumes:
        - name: tmp
          emptyDir: {sizeLimit: 64Mi}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    app.kubernetes.io/name: gpuhooks
                    app.kubernetes.io/instance: gpuhooks
                    app.kubernetes.io/component: agent
---
# Source: gpuhooks/templates/hooks.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpuhooks
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: hooks
spec:
  replicas: 2
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: gpuhooks
      app.kubernetes.io/instance: gpuhooks
      app.kubernetes.io/component: hooks
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/component: hooks
    spec:
      serviceAccountName: gpuhooks
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        fsGroup: 1000
        seccompProfile:
          type: RuntimeDefault
      # SHUTDOWN_TIMEOUT_SECONDS (25) drains in-flight hook calls inside this grace period.
      terminationGracePeriodSeconds: 30
      containers:
        - name: hooks
          image: ghcr.io/gpustack/gpuhooks:0.1.0
          imagePullPolicy: IfNotPresent
          command: ["node", "dist/hooks/main.js"]
          env:
            - {name: PORT, value: "8080"}
            - {name: WEBHOOK_PORT, value: "9443"}
            - {name: TLS_CERT_FILE, value: /etc/gpuhooks/tls/tls.crt}
            - {name: TLS_KEY_FILE, value: /etc/gpuhooks/tls/tls.key}
            - {name: LOG_LEVEL, value: "info"}
            - {name: BODY_LIMIT, value: "1.6777216e+07"}
            - {name: SHUTDOWN_TIMEOUT_SECONDS, value: "25"}
          ports:
            - {name: http, containerPort: 8080, protocol: TCP}
            - {name: webhook, containerPort: 9443, protocol: TCP}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            periodSeconds: 5
            failureThreshold: 2
          livenessProbe:
            httpGet: {path: /healthz, port: http}
            periodSeconds: 10
            failureThreshold: 3
            timeoutSeconds: 5
          resources:
            limits:
              memory: 512Mi
            requests:
              cpu: 100m
              memory: 192Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            runAsUser: 1000
            runAsGroup: 1000
            capabilities:
              drop: [ALL]
            seccompProfile:
              type: RuntimeDefault
          volumeMounts:
            - {name: tls, mountPath: /etc/gpuhooks/tls, readOnly: true}
            - {name: tmp, mountPath: /tmp}
      volumes:
        # Written by the certificate Job (or cert-manager); the Pod starts once it exists.
        - name: tls
          secret:
            secretName: gpuhooks-webhook-tls
        - name: tmp
          emptyDir: {sizeLimit: 64Mi}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    app.kubernetes.io/name: gpuhooks
                    app.kubernetes.io/instance: gpuhooks
                    app.kubernetes.io/component: hooks
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              app.kubernetes.io/name: gpuhooks
              app.kubernetes.io/instance: gpuhooks
              app.kubernetes.io/component: hooks
---
# Source: gpuhooks/templates/certs.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: gpuhooks-certs-1
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
spec:
  backoffLimit: 6
  # Gone after an hour, so that applying this manifest again runs it again.
  ttlSecondsAfterFinished: 3600
  template:
    
    metadata:
      labels:
        app.kubernetes.io/name: gpuhooks
        app.kubernetes.io/instance: gpuhooks
        app.kubernetes.io/component: certs
    spec:
      serviceAccountName: gpuhooks-certs
      restartPolicy: OnFailure
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        fsGroup: 1000
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: certs
          image: ghcr.io/gpustack/gpuhooks:0.1.0
          imagePullPolicy: IfNotPresent
          command: ["node", "dist/hooks/certs/main.js"]
          env:
            - name: NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
            - {name: SECRET_NAME, value: gpuhooks-webhook-tls}
            - {name: SERVICE_NAME, value: gpuhooks}
            - {name: WEBHOOK_CONFIGURATIONS, value: "gpuhooks-instance,gpuhooks-cellpool"}
            - {name: DEPLOYMENT_NAME, value: gpuhooks}
            - {name: CA_VALIDITY_DAYS, value: "3650"}
            - {name: CERT_VALIDITY_DAYS, value: "730"}
            - {name: RENEW_BEFORE_DAYS, value: "90"}
          resources:
            limits:
              memory: 256Mi
            requests:
              cpu: 50m
              memory: 96Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            runAsUser: 1000
            runAsGroup: 1000
            capabilities:
              drop: [ALL]
            seccompProfile:
              type: RuntimeDefault
---
# Source: gpuhooks/templates/certs.yaml
apiVersion: batch/v1
kind: CronJob
metadata:
  name: gpuhooks-certs
  namespace: gpuhooks-system
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: certs
spec:
  schedule: "17 3 * * 1"
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 2
  jobTemplate:
    spec:
      backoffLimit: 3
      template:
        
        metadata:
          labels:
            app.kubernetes.io/name: gpuhooks
            app.kubernetes.io/instance: gpuhooks
            app.kubernetes.io/component: certs
        spec:
          serviceAccountName: gpuhooks-certs
          restartPolicy: OnFailure
          securityContext:
            runAsNonRoot: true
            runAsUser: 1000
            runAsGroup: 1000
            fsGroup: 1000
            seccompProfile:
              type: RuntimeDefault
          containers:
            - name: certs
              image: ghcr.io/gpustack/gpuhooks:0.1.0
              imagePullPolicy: IfNotPresent
              command: ["node", "dist/hooks/certs/main.js"]
              env:
                - name: NAMESPACE
                  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
                - {name: SECRET_NAME, value: gpuhooks-webhook-tls}
                - {name: SERVICE_NAME, value: gpuhooks}
                - {name: WEBHOOK_CONFIGURATIONS, value: "gpuhooks-instance,gpuhooks-cellpool"}
                - {name: DEPLOYMENT_NAME, value: gpuhooks}
                - {name: CA_VALIDITY_DAYS, value: "3650"}
                - {name: CERT_VALIDITY_DAYS, value: "730"}
                - {name: RENEW_BEFORE_DAYS, value: "90"}
              resources:
                limits:
                  memory: 256Mi
                requests:
                  cpu: 50m
                  memory: 96Mi
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                runAsNonRoot: true
                runAsUser: 1000
                runAsGroup: 1000
                capabilities:
                  drop: [ALL]
                seccompProfile:
                  type: RuntimeDefault
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  labels:
    app.kubernetes.io/component: cellpool
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-cellpool
spec:
  childResources:
  - apiVersion: v1
    resource: secrets
    updateStrategy:
      method: InPlace
  - apiVersion: seed.kubeswift.io/v1alpha1
    resource: swiftseedprofiles
    updateStrategy:
      method: InPlace
  - apiVersion: swift.kubeswift.io/v1alpha1
    resource: swiftguests
    updateStrategy:
      method: InPlace
  - apiVersion: cells.kubeswift.io/v1alpha1
    resource: cellnodesets
    updateStrategy:
      method: InPlace
  - apiVersion: cells.kubeswift.io/v1alpha1
    resource: cellinfrastructures
    updateStrategy:
      method: InPlace
  generateSelector: true
  hooks:
    customize:
      version: v2
      webhook:
        path: /hooks/cellpool/customize
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
    finalize:
      version: v2
      webhook:
        path: /hooks/cellpool/finalize
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
    sync:
      version: v2
      webhook:
        path: /hooks/cellpool/sync
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
  parentResource:
    apiVersion: cells.kubeswift.io/v1alpha1
    resource: gpucellpools
  resyncPeriodSeconds: 30
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance
spec:
  childResources:
  - apiVersion: v1
    resource: pods
    updateStrategy:
      method: OnDelete
  - apiVersion: v1
    resource: services
    updateStrategy:
      method: InPlace
  - apiVersion: resource.k8s.io/v1
    resource: resourceclaimtemplates
    updateStrategy:
      method: Recreate
  - apiVersion: v1
    resource: persistentvolumeclaims
    updateStrategy:
      method: InPlace
  - apiVersion: worker.gpustack.ai/v1alpha1
    resource: instanceactivities
    updateStrategy:
      method: InPlace
  generateSelector: true
  hooks:
    customize:
      version: v2
      webhook:
        path: /hooks/instance/customize
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
    finalize:
      version: v2
      webhook:
        path: /hooks/instance/finalize
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
    sync:
      version: v2
      webhook:
        path: /hooks/instance/sync
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
  parentResource:
    apiVersion: worker.gpustack.ai/v1alpha1
    ignoreStatusChanges: true
    resource: instances
  resyncPeriodSeconds: 600
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata:
  labels:
    app.kubernetes.io/component: instance-isolation
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-isolation
spec:
  attachments:
  - apiVersion: networking.k8s.io/v1
    resource: networkpolicies
    updateStrategy:
      method: InPlace
  hooks:
    customize:
      version: v2
      webhook:
        path: /hooks/isolation/customize
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
    sync:
      version: v2
      webhook:
        path: /hooks/isolation/sync
        service:
          name: gpuhooks
          namespace: gpuhooks-system
          port: 80
          protocol: http
        timeout: 10s
  resources:
  - apiVersion: v1
    resource: namespaces
  resyncPeriodSeconds: 300
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  labels:
    app.kubernetes.io/component: agent
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-agent-instance-stop
spec:
  failurePolicy: Fail
  matchConditions:
  - expression: request.userInfo.username == 'system:serviceaccount:gpuhooks-system:gpuhooks-agent'
    name: the-workload-agent
  matchConstraints:
    resourceRules:
    - apiGroups:
      - worker.gpustack.ai
      apiVersions:
      - '*'
      operations:
      - CREATE
      - UPDATE
      - DELETE
      resources:
      - instances
  validations:
  - expression: request.operation == 'UPDATE'
    message: the workload agent may not create or delete an Instance
    reason: Forbidden
  - expression: request.operation != 'UPDATE' || has(object.spec.stop) && object.spec.stop
      == true && has(object.spec.type) == has(oldObject.spec.type) && (!has(object.spec.type)
      || object.spec.type == oldObject.spec.type) && has(object.spec.image) == has(oldObject.spec.image)
      && (!has(object.spec.image) || object.spec.image == oldObject.spec.image) &&
      has(object.spec.imagePullPolicy) == has(oldObject.spec.imagePullPolicy) && (!has(object.spec.imagePullPolicy)
      || object.spec.imagePullPolicy == oldObject.spec.imagePullPolicy) && has(object.spec.command)
      == has(oldObject.spec.command) && (!has(object.spec.command) || object.spec.command
      == oldObject.spec.command) && has(object.spec.args) == has(oldObject.spec.args)
      && (!has(object.spec.args) || object.spec.args == oldObject.spec.args) && has(object.spec.env)
      == has(oldObject.spec.env) && (!has(object.spec.env) || object.spec.env == oldObject.spec.env)
      && has(object.spec.imagePullSecrets) == has(oldObject.spec.imagePullSecrets)
      && (!has(object.spec.imagePullSecrets) || object.spec.imagePullSecrets == oldObject.spec.imagePullSecrets)
      && has(object.spec.ports) == has(oldObject.spec.ports) && (!has(object.spec.ports)
      || object.spec.ports == oldObject.spec.ports) && has(object.spec.resources)
      == has(oldObject.spec.resources) && (!has(object.spec.resources) || object.spec.resources
      == oldObject.spec.resources) && has(object.spec.sshPublicKey) == has(oldObject.spec.sshPublicKey)
      && (!has(object.spec.sshPublicKey) || object.spec.sshPublicKey == oldObject.spec.sshPublicKey)
      && has(object.spec.workspace) == has(oldObject.spec.workspace) && (!has(object.spec.workspace)
      || object.spec.workspace == oldObject.spec.workspace) && has(object.spec.nodeName)
      == has(oldObject.spec.nodeName) && (!has(object.spec.nodeName) || object.spec.nodeName
      == oldObject.spec.nodeName)
    message: the workload agent may change only spec.stop of an Instance, and only
      to true
    reason: Forbidden
  - expression: |-
      request.operation != 'UPDATE' || has(object.metadata.labels) == has(oldObject.metadata.labels) && (!has(object.metadata.labels) || object.metadata.labels == oldObject.metadata.labels) && has(object.metadata.finalizers) == has(oldObject.metadata.finalizers) && (!has(object.metadata.finalizers) || object.metadata.finalizers == oldObject.metadata.finalizers) && has(object.metadata.ownerReferences) == has(oldObject.metadata.ownerReferences) && (!has(object.metadata.ownerReferences) || object.metadata.ownerReferences == oldObject.metadata.ownerReferences) && (!has(object.metadata.annotations) || object.metadata.annotations.all(k, k == 'gpustack.ai/stopped-by' ||
        has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations && oldObject.metadata.annotations[k] == object.metadata.annotations[k])) &&
      (!has(oldObject.metadata.annotations) || oldObject.metadata.annotations.all(k, k == 'gpustack.ai/stopped-by' ||
        has(object.metadata.annotations) && k in object.metadata.annotations))
    message: the workload agent may change only the annotation gpustack.ai/stopped-by
      of an Instance's metadata
    reason: Forbidden
  - expression: request.operation != 'UPDATE' || !has(object.metadata.annotations)
      || !('gpustack.ai/stopped-by' in object.metadata.annotations) || object.metadata.annotations['gpustack.ai/stopped-by'].matches('^(Idle|MaxRunDuration)
      [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$')
    message: the annotation gpustack.ai/stopped-by is '<Idle|MaxRunDuration> <RFC
      3339 time>'
    reason: Invalid
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  labels:
    app.kubernetes.io/component: cellpool
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-cellnodeset-spec-writers
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:
      - cells.kubeswift.io
      apiVersions:
      - '*'
      operations:
      - CREATE
      - UPDATE
      resources:
      - cellnodesets
      - cellinfrastructures
  validations:
  - expression: request.userInfo.username == variables.writer || variables.specUnchanged
    messageExpression: '''only '' + variables.writer + '' (Metacontroller) may write
      the spec of a '' + object.kind + ''; '' + request.userInfo.username + '' may
      not'''
    reason: Forbidden
  variables:
  - expression: '''system:serviceaccount:metacontroller:metacontroller'''
    name: writer
  - expression: request.operation == 'UPDATE' && has(oldObject.spec) == has(object.spec)
      && (!has(object.spec) || object.spec == oldObject.spec)
    name: specUnchanged
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-type-access
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:
      - worker.gpustack.ai
      apiVersions:
      - '*'
      operations:
      - CREATE
      - UPDATE
      resources:
      - instances
  paramKind:
    apiVersion: worker.gpustack.ai/v1alpha1
    kind: InstanceType
  validations:
  - expression: |-
      !variables.checked || variables.selector == null || ((!has(variables.selector.matchLabels) ||
        variables.selector.matchLabels.all(k, k in variables.labels && variables.labels[k] == variables.selector.matchLabels[k])) &&
       (!has(variables.selector.matchExpressions) ||
        variables.selector.matchExpressions.all(e,
          e.operator == 'In' ? (e.key in variables.labels && has(e.values) && variables.labels[e.key] in e.values) :
          e.operator == 'NotIn' ? (!(e.key in variables.labels) || !has(e.values) || !(variables.labels[e.key] in e.values)) :
          e.operator == 'Exists' ? e.key in variables.labels :
          !(e.key in variables.labels))))
    messageExpression: '''InstanceType '' + params.metadata.name + '' is not available
      in namespace '' + namespaceObject.metadata.name + '' (its spec.access.namespaceSelector
      does not match the namespace\\''s labels)'''
    reason: Forbidden
  variables:
  - expression: 'has(object.spec) && has(object.spec.type) ? object.spec.type : '''''
    name: typeName
  - expression: params.metadata.name == variables.typeName && (request.operation ==
      'CREATE' || !has(oldObject.spec) || !has(oldObject.spec.type) || oldObject.spec.type
      != variables.typeName)
    name: checked
  - expression: 'has(params.spec) && has(params.spec.access) && has(params.spec.access.namespaceSelector)
      ? params.spec.access.namespaceSelector : null'
    name: selector
  - expression: 'has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels
      : {}'
    name: labels
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-type-queue-dra
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules:
    - apiGroups:
      - worker.gpustack.ai
      apiVersions:
      - '*'
      operations:
      - CREATE
      - UPDATE
      resources:
      - instancetypes
  validations:
  - expression: '!(has(object.spec) && has(object.spec.queue) && has(object.spec.devicePlugin)
      && object.spec.devicePlugin == ''DRA'')'
    messageExpression: '''InstanceType '' + object.metadata.name + '' has spec.queue
      and devicePlugin DRA: Kueue counts ResourceClaims against quota only with its
      DynamicResourceAllocation feature gate and deviceClassMappings set; without
      them the queue holds Pods but its quota counts no GPUs'''
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-activity-writers
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:
      - worker.gpustack.ai
      apiVersions:
      - '*'
      operations:
      - CREATE
      - UPDATE
      resources:
      - instanceactivities
      - instanceactivities/status
  validations:
  - expression: variables.isStatus || request.userInfo.username == variables.specWriter
      || variables.specUnchanged
    messageExpression: '''only '' + variables.specWriter + '' (Metacontroller) may
      create an InstanceActivity or write its spec; '' + request.userInfo.username
      + '' may not'''
    reason: Forbidden
  - expression: '!variables.isStatus || request.userInfo.username == variables.statusWriter
      || variables.statusUnchanged'
    messageExpression: '''only '' + variables.statusWriter + '' (the gpuhooks agent)
      may write the status of an InstanceActivity; '' + request.userInfo.username
      + '' may not'''
    reason: Forbidden
  variables:
  - expression: '''system:serviceaccount:metacontroller:metacontroller'''
    name: specWriter
  - expression: '''system:serviceaccount:gpuhooks-system:gpuhooks-agent'''
    name: statusWriter
  - expression: has(request.subResource) && request.subResource == 'status'
    name: isStatus
  - expression: request.operation == 'UPDATE' && has(oldObject.spec) == has(object.spec)
      && (!has(object.spec) || object.spec == oldObject.spec)
    name: specUnchanged
  - expression: request.operation == 'UPDATE' && has(oldObject.status) == has(object.status)
      && (!has(object.status) || object.status == oldObject.status)
    name: statusUnchanged
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  labels:
    app.kubernetes.io/component: agent
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-agent-instance-stop
spec:
  policyName: gpuhooks-agent-instance-stop
  validationActions:
  - Deny
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  labels:
    app.kubernetes.io/component: cellpool
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-cellnodeset-spec-writers
spec:
  policyName: gpuhooks-cellnodeset-spec-writers
  validationActions:
  - Deny
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-type-access
spec:
  paramRef:
    parameterNotFoundAction: Allow
    selector: {}
  policyName: gpuhooks-instance-type-access
  validationActions:
  - Deny
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-type-queue-dra
spec:
  policyName: gpuhooks-instance-type-queue-dra
  validationActions:
  - Warn
---
# Source: gpuhooks/templates/metacontroller.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  labels:
    app.kubernetes.io/component: instance
    app.kubernetes.io/part-of: gpuhooks
  name: gpuhooks-instance-activity-writers
spec:
  policyName: gpuhooks-instance-activity-writers
  validationActions:
  - Deny
---
# Source: gpuhooks/templates/webhooks.yaml
# Admission for instances: failurePolicy Fail, so while the hooks are unreachable a create or
# update is refused rather than let through unchecked. The caBundle is written after install by
# the certificate Job; an apply of this manifest leaves it in place.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: gpuhooks-instance
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: webhook
webhooks:
  - name: instances.worker.gpustack.ai
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    matchPolicy: Equivalent
    timeoutSeconds: 10
    clientConfig:
      service:
        name: gpuhooks
        namespace: gpuhooks-system
        port: 443
        path: /admission/instance
    rules:
      - apiGroups: ["worker.gpustack.ai"]
        apiVersions: [v1alpha1]
        resources: [instances]
        operations: [CREATE, UPDATE]
        scope: Namespaced
---
# Source: gpuhooks/templates/webhooks.yaml
# Admission for gpucellpools: failurePolicy Fail, so while the hooks are unreachable a create or
# update is refused rather than let through unchecked. The caBundle is written after install by
# the certificate Job; an apply of this manifest leaves it in place.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: gpuhooks-cellpool
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
    app.kubernetes.io/component: webhook
webhooks:
  - name: gpucellpools.cells.kubeswift.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    matchPolicy: Equivalent
    timeoutSeconds: 10
    clientConfig:
      service:
        name: gpuhooks
        namespace: gpuhooks-system
        port: 443
        path: /admission/cellpool
    rules:
      - apiGroups: ["cells.kubeswift.io"]
        apiVersions: [v1alpha1]
        resources: [gpucellpools]
        operations: [CREATE, UPDATE]
        scope: Namespaced
---
# Source: gpuhooks/templates/settings.yaml
apiVersion: gpustack.ai/v1alpha1
kind: Setting
metadata:
  name: instance-isolation-pod-cidrs
  labels:
    app.kubernetes.io/name: gpuhooks
    app.kubernetes.io/instance: gpuhooks
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/part-of: gpuhooks
    helm.sh/chart: gpuhooks-0.1.0
  annotations:
    helm.sh/resource-policy: keep
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: "0"
value: ""

`

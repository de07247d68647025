/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`tests/unit/instance-pod.test.ts > TAP > the rendered bytes of a GPU Instance with SSH and ports are the reviewed ones > must match snapshot 1`] = `
{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "nb",
    "namespace": "team-a",
    "labels": {
      "app.kubernetes.io/part-of": "nb",
      "app.kubernetes.io/managed-by": "gpuhooks",
      "resource.gpustack.ai/type": "instances",
      "worker.gpustack.ai/instance-type": "a100"
    },
    "annotations": {
      "worker.gpustack.ai/instance-generation": "3",
      "worker.gpustack.ai/pod-hash": "5d1a66e934"
    }
  },
  "spec": {
    "automountServiceAccountToken": false,
    "containers": [
      {
        "name": "main",
        "image": "x",
        "imagePullPolicy": "IfNotPresent",
        "ports": [
          {
            "containerPort": 80,
            "protocol": "TCP"
          }
        ],
        "resources": {
          "limits": {
            "cpu": "4",
            "memory": "32Gi",
            "nvidia.com/gpu": "1",
            "nvidia.com/gpucores": "100",
            "nvidia.com/gpumem-percentage": "100"
          },
          "requests": {
            "cpu": "4",
            "memory": "32Gi",
            "nvidia.com/gpu": "1",
            "nvidia.com/gpucores": "100",
            "nvidia.com/gpumem-percentage": "100"
          }
        },
        "volumeMounts": [
          {
            "name": "workspace",
            "mountPath": "/workspace"
          }
        ]
      },
      {
        "name": "sshd",
        "image": "sshd:1",
        "ports": [
          {
            "name": "ssh",
            "containerPort": 22,
            "protocol": "TCP"
          }
        ],
        "resources": {
          "requests": {
            "cpu": "50m",
            "memory": "64Mi"
          }
        },
        "securityContext": {
          "allowPrivilegeEscalation": true,
          "capabilities": {
            "add": [
              "SYS_ADMIN",
              "SYS_PTRACE",
              "SYS_CHROOT",
              "SETUID",
              "SETGID",
              "SETPCAP",
              "NET_BIND_SERVICE",
              "AUDIT_WRITE"
            ],
            "drop": [
              "ALL"
            ]
          },
          "privileged": false
        },
        "volumeMounts": [
          {
            "name": "ssh-authorized-keys",
            "mountPath": "/etc/ssh/gpuhooks",
            "readOnly": true
          },
          {
            "name": "ssh-host-keys",
            "mountPath": "/var/lib/gpuhooks-sshd"
          }
        ]
      }
    ],
    "enableServiceLinks": false,
    "nodeSelector": {
      "accelerator": "nvidia",
      "gpu.example.com/model": "a100"
    },
    "restartPolicy": "Always",
    "runtimeClassName": "nvidia",
    "shareProcessNamespace": true,
    "tolerations": [
      {
        "effect": "NoSchedule",
        "key": "nvidia.com/gpu",
        "operator": "Exists"
      }
    ],
    "volumes": [
      {
        "name": "workspace",
        "emptyDir": {}
      },
      {
        "name": "ssh-authorized-keys",
        "secret": {
          "secretName": "k",
          "items": [
            {
              "key": "authorized_keys",
              "path": "authorized_keys",
              "mode": 256
            }
          ]
        }
      },
      {
        "name": "ssh-host-keys",
        "emptyDir": {}
      }
    ]
  }
}
`

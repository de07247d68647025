/**
 * The configuration files of a real node (node.ts): containerd's, the CNI network's, kubelet's and
 * kube-proxy's. Pure builders of text from the node's layout, so what each process is told is in
 * one place, with the reason for every setting this machine needs.
 */
import { join } from 'node:path'

/** Where a node lives and how it is addressed; every path is under `dir`. */
export interface NodeLayout {
  dir: string
  /** The Node's name (also its hostname override). */
  name: string
  /** The node's address, on a veth device the harness makes: kubelet, node ports, the API server. */
  address: string
  /** The bridge the Pods hang off; its address is the first of `podCidr`. */
  bridge: string
  /** The node's pod CIDR (the Node's `spec.podCIDR`, the CNI IPAM range). */
  podCidr: string
  /** The cluster's pod CIDR, which kube-proxy uses to tell Pod traffic from outside traffic. */
  clusterPodCidr: string
  /** The cluster DNS address kubelet writes into each Pod's resolv.conf (a Service IP). */
  dnsAddress: string
  /** The pause image's reference (imported before kubelet starts). */
  pauseImage: string
  caCert: string
  kubeconfig: string
  kubeletPort: number
  kubeProxyHealthPort: number
  kubeProxyMetricsPort: number
}

/** Paths derived from the layout. */
export const nodePaths = (dir: string) => ({
  containerdConfig: join(dir, 'containerd.toml'),
  containerdRoot: join(dir, 'containerd', 'root'),
  containerdState: join(dir, 'containerd', 'state'),
  containerdSocket: join(dir, 'containerd', 'containerd.sock'),
  cniConfDir: join(dir, 'cni', 'net.d'),
  cniIpamDir: join(dir, 'cni', 'ipam'),
  kubeletConfig: join(dir, 'kubelet.yaml'),
  kubeletRoot: join(dir, 'kubelet'),
  podLogs: join(dir, 'pod-logs'),
  volumePlugins: join(dir, 'volume-plugins'),
  resolvConf: join(dir, 'resolv.conf'),
  kubeProxyConfig: join(dir, 'kube-proxy.yaml')
})

/** The cgroup under which kubelet puts every Pod (cgroupfs driver), removed when the node stops. */
export const CGROUP_ROOT = '/gpuhooks-node'

/** The CNI plugins' directory: Debian's containernetworking-plugins. */
export const CNI_BIN_DIR = '/usr/lib/cni'

/**
 * containerd 1.6's configuration: its own root, state and sockets (so it is the test's alone, beside
 * podman's storage), the CRI plugin with the local pause image, runc with the cgroupfs manager
 * (the host's cgroups are v1 with a v2 hybrid mount), and `restrict_oom_score_adj`: the sandbox
 * lacks CAP_SYS_RESOURCE, so a container may not lower its oom_score_adj, and without this every
 * sandbox dies with "can't get final child's PID from pipe".
 */
export function containerdConfig(node: NodeLayout): string {
  const p = nodePaths(node.dir)
  const q = JSON.stringify
  return `version = 2
root = ${q(p.containerdRoot)}
state = ${q(p.containerdState)}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing"]
[grpc]
  address = ${q(p.containerdSocket)}
[ttrpc]
  address = ${q(`${p.containerdSocket}.ttrpc`)}
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(node.dir, 'containerd', 'opt'))}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(node.pauseImage)}
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(CNI_BIN_DIR)}
    conf_dir = ${q(p.cniConfDir)}
    max_conf_num = 1
`
}

/**
 * The Pod network: one bridge with host-local addresses from the node's pod CIDR, the bridge as
 * the Pods' gateway (so they reach the node's address and, through kube-proxy, Services), no
 * masquerading (nothing leaves the machine) and hairpin mode (a Pod reaching itself through a
 * Service). Debian's plugins speak CNI 1.0.0.
 */
export function cniConflist(node: NodeLayout): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'gpuhooks',
    plugins: [
      {
        type: 'bridge',
        bridge: node.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: node.podCidr }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: nodePaths(node.dir).cniIpamDir
        }
      }
    ]
  })
}

/**
 * kubelet's configuration. What this machine needs: `failCgroupV1: false` (cgroup v1 hosts are
 * refused otherwise), the cgroupfs driver, `failSwapOn: false`, no node-allocatable enforcement;
 * every path of its own under the node's directory; client certificates of the cluster CA for the
 * API server's calls (logs, exec), authorised without a webhook; eviction only at the last
 * megabytes, so another engineer's disk use on this shared machine never evicts a test Pod.
 */
export function kubeletConfig(node: NodeLayout): string {
  const p = nodePaths(node.dir)
  return JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: node.address,
    port: node.kubeletPort,
    readOnlyPort: 0,
    healthzPort: 0,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: node.caCert } },
    authorization: { mode: 'AlwaysAllow' },
    cgroupDriver: 'cgroupfs',
    cgroupRoot: CGROUP_ROOT,
    failCgroupV1: false,
    failSwapOn: false,
    enforceNodeAllocatable: [],
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    clusterDNS: [node.dnsAddress],
    clusterDomain: 'cluster.local',
    resolvConf: p.resolvConf,
    podLogsDir: p.podLogs,
    volumePluginDir: p.volumePlugins,
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '50Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    serializeImagePulls: false,
    maxPods: 40,
    shutdownGracePeriod: '0s',
    registerNode: true
  })
}

/**
 * kube-proxy's configuration: iptables mode (kube-router's firewall is iptables and ipset too),
 * node ports on the node's address only (never on the machine's own interfaces), Pod traffic told
 * apart by the cluster pod CIDR, and conntrack sysctls left as they are (the sandbox may not set
 * them, and the test must not change the machine's).
 */
export function kubeProxyConfig(node: NodeLayout): string {
  return JSON.stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: node.kubeconfig },
    hostnameOverride: node.name,
    bindAddress: node.address,
    healthzBindAddress: `127.0.0.1:${node.kubeProxyHealthPort}`,
    metricsBindAddress: `127.0.0.1:${node.kubeProxyMetricsPort}`,
    mode: 'iptables',
    clusterCIDR: node.clusterPodCidr,
    detectLocalMode: 'ClusterCIDR',
    nodePortAddresses: [`${node.address}/32`],
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' }
  })
}

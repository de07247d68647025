#!/bin/sh
# The real node's lock holder and watchdog (node.ts starts it under flock):
# prints "locked" once it holds the machine's node lock, then waits for the
# test process to end. When the test stopped its node, the test kills this
# script and the lock is released. When the test process died without
# stopping it (SIGKILL, a runner's timeout), this script takes back what the
# node left on the machine, by the node's own records: the processes in its
# pid file, the containers and shims in containerd's state, the mounts under
# its directory, the Pods' network namespaces made since it started, its
# links, iptables chains and ipsets, the forwarding switch, its cgroups and
# the host directories kubelet and libcni made.
parent=$1 dir=$2 bin=$3 router=$4 bridge=$5 device=$6 cgroup=$7 outside=$8
echo locked
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
[ -d "$dir" ] || exit 0
if [ -f "$dir/pids" ]; then
  while read -r pid; do kill -KILL "$pid" 2>/dev/null; done <"$dir/pids"
fi
for name in init.pid shim.pid; do
  for file in "$dir"/containerd/state/io.containerd.runtime.v2.task/*/*/"$name"; do
    [ -f "$file" ] && kill -KILL "$(cat "$file")" 2>/dev/null
  done
done
sleep 1
awk '{print $5}' /proc/self/mountinfo | grep "^$dir/" | sort -r | while read -r mount; do umount -l "$mount"; done
for ns in $(ls /run/netns 2>/dev/null); do
  case "$ns" in cni-*) grep -qx "$ns" "$dir/netns-before" 2>/dev/null || ip netns delete "$ns" ;; esac
done
for pid in $(ip netns pids "$outside" 2>/dev/null); do kill -KILL "$pid"; done
ip netns delete "$outside" 2>/dev/null
ip link delete "$bridge" 2>/dev/null
ip link delete "$device" 2>/dev/null
"$bin/kube-proxy" --cleanup >/dev/null 2>&1
[ -x "$router" ] && "$router" --cleanup-config >/dev/null 2>&1
for family in iptables ip6tables; do
  "$family-save" | awk '
    /^\*/ { if (t != "") print_table(); t = $0; n = 0; m = 0; next }
    /^:KUBE-/ { c[++n] = substr($1, 2); next }
    /^-A / && $2 !~ /^KUBE-/ && / -j KUBE-/ { r[++m] = "-D " substr($0, 4) }
    END { if (t != "") print_table() }
    function print_table(  i) {
      if (n == 0) return
      print t; for (i = 1; i <= m; i++) print r[i]
      for (i = 1; i <= n; i++) print "-F " c[i]; for (i = 1; i <= n; i++) print "-X " c[i]; print "COMMIT"
    }' | "$family-restore" --noflush 2>/dev/null
done
ipset list -n 2>/dev/null | grep -iE '^(KUBE-|kube-router)' | while read -r set; do ipset destroy "$set"; done
[ -f "$dir/ip_forward-before" ] && cat "$dir/ip_forward-before" >/proc/sys/net/ipv4/ip_forward
for top in /sys/fs/cgroup/*"$cgroup"; do
  [ -d "$top" ] && find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -f "$dir/new-dirs" ]; then
  while read -r made; do [ -n "$made" ] && rm -rf "$made"; done <"$dir/new-dirs"
fi
rm -rf "$dir"

#!/bin/bash
# Runs the scripts given (default: all *.pkt here) against the running kernel's TCP, each
# in a fresh network namespace, and prints OK/FAIL per script. Needs root, /dev/net/tun,
# and a packetdrill binary: PACKETDRILL=/path/to/packetdrill (build it from a copy of
# /work/shared/packetdrill, see PACKETDRILL-HERE.md there).
set -u
here=$(cd "$(dirname "$0")" && pwd)
pd=${PACKETDRILL:?set PACKETDRILL to the packetdrill binary}
fail=0
[ $# -eq 0 ] && set -- "$here"/*.pkt
for f in "$@"; do
  f=$(readlink -f "$f"); ns=wlpd$$
  ip netns add $ns && ip -netns $ns link set lo up
  out=$(cd "$(dirname "$f")" && timeout -k 5 25 ip netns exec $ns "$pd" --ip_version=ipv4 \
        --local_ip=192.168.0.1 --gateway_ip=192.168.0.1 --netmask_ip=255.255.0.0 \
        --remote_ip=192.0.2.1 "$(basename "$f")" 2>&1)
  rc=$?
  ip netns del $ns
  if [ $rc -eq 0 ]; then echo "OK   $(basename "$f")"; else echo "FAIL $(basename "$f")"; echo "$out" | tail -5; fail=1; fi
done
exit $fail

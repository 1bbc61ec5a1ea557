#!/usr/bin/env bash
# Measures what the live driver sustains (docs/live.md "Measured"): a kernel TCP flow from
# one TUN node to another through a simulated router, at several link rates, and a wirelab
# TCP flow from a simulated host to a kernel receiver. Prints one line per case: goodput,
# event lag (median / p99 / max) and TUN packets per second. Needs root; run from the
# checkout with a release build: scripts/live-throughput.sh [target/release/wirelab]
set -euo pipefail
WL=${1:-target/release/wirelab}
SECS=${SECS:-8}
KPEER=$(cd "$(dirname "$0")/.." && pwd)/crates/wirelab-live/tests/peers/kpeer.py
TMP=$(mktemp -d /tmp/wirelab-live-tput.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
printf "%-28s %10s %9s %9s %9s %10s\n" case "Mbit/s" "lag p50" "lag p99" "lag max" "TUN pkt/s"
run_case() { # name rate sender(kernel|wirelab)
  local name=$1 rate=$2 f=$TMP/$1.toml a
  if [ "$3" = kernel ]; then
    a='kind = "tun"
run = ["sleep 0.3; python3 '"$KPEER"' send-for 10.0.2.2 5001 '"$SECS"' > send.json"]'
  else
    a='[[app]]
name = "bulk"
kind = "tcp-bulk"
node = "a"
dst = "10.0.2.2:5001"
start = "300ms"
stop = "'"$SECS"'s"
[[node]]'
    a=${a%\[\[node\]\]}
  fi
  cat >"$f" <<TOML
[scenario]
name = "tput"
duration = "$((SECS + 20))s"
[[node]]
name = "a"
$a
[[node]]
name = "b"
kind = "tun"
run = ["python3 $KPEER recv 5001 > recv.json"]
ready = ["tcp:5001"]
[[node]]
name = "r"
kind = "router"
[[link]]
a = { node = "a", addr = "10.0.1.2/24" }
b = { node = "r", addr = "10.0.1.1/24", qdisc = "pfifo limit 1000" }
netem = "rate $rate delay 1ms"
[[link]]
a = { node = "r", addr = "10.0.2.1/24", qdisc = "pfifo limit 1000" }
b = { node = "b", addr = "10.0.2.2/24" }
netem = "rate $rate delay 1ms"
TOML
  "$WL" live "$f" --out "$TMP/$name" -q 2>/dev/null || true
  python3 - "$TMP/$name" "$name" <<'PY'
import json, sys
d, name = sys.argv[1], sys.argv[2]
s = json.load(open(f"{d}/summary.json"))
l = s["live"]
r = json.loads(open(f"{d}/recv.json").read().strip().splitlines()[-1])
lag = l["event_lag"]
pkts = sum(t["rx_packets"] + t["tx_packets"] for t in l["tun"])
print(f"{name:<28} {r['bytes'] * 8 / r['seconds'] / 1e6:10.1f} {lag['median_ns'] / 1e6:8.3f}ms {lag['p99_ns'] / 1e6:8.3f}ms {lag['max_ns'] / 1e6:8.2f}ms {pkts / l['wall_seconds']:10.0f}")
PY
}
for rate in ${RATES:-50mbit 100mbit 200mbit 500mbit 1gbit}; do
  run_case "kernel-kernel-$rate" "$rate" kernel
  run_case "wirelab-kernel-$rate" "$rate" wirelab
done

#!/usr/bin/env bash
# Runs every bundled scenario with two wirelab binaries and compares every output file
# (summary.json without its wall-clock fields, every CSV table, every pcap) byte for byte.
# Stronger than scripts/fingerprints.sh (which hashes deliveries and drops only): it also
# catches a changed column, counter or captured byte. Usage:
#   cp target/release/wirelab /tmp/wirelab-before; ... change, rebuild ...
#   scripts/compare-outputs.sh /tmp/wirelab-before target/release/wirelab
# DURATION (default 10s) caps each run's simulated time.
set -uo pipefail
cd "$(dirname "$0")/.."
a=$1; b=$2; dur=${DURATION:-10s}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
strip='import json,sys
def s(o):
    if isinstance(o, dict): return {k: s(v) for k, v in o.items() if "wall" not in k}
    if isinstance(o, list): return [s(x) for x in o]
    return o
p = sys.argv[1]; json.dump(s(json.load(open(p))), open(p, "w"), indent=1, sort_keys=True)'
n=0; bad=0
for f in scenarios/*.toml scenarios/*/*.toml; do
  # live-mode scenarios (TUN nodes) need `wirelab live` and root
  grep -q 'kind = "tun"' "$f" && continue
  n=$((n + 1))
  for side in a b; do
    bin=$a; [ $side = b ] && bin=$b
    "$bin" run "$f" --out "$tmp/$side" --seed 1 --set "scenario.duration=$dur" -q 2>"$tmp/$side.err" || true
    [ -f "$tmp/$side/summary.json" ] && python3 -c "$strip" "$tmp/$side/summary.json"
  done
  if ! diff -r "$tmp/a" "$tmp/b" >/dev/null 2>&1 || ! diff "$tmp/a.err" "$tmp/b.err" >/dev/null; then
    echo "DIFFERS: $f"; diff -rq "$tmp/a" "$tmp/b" | head -5; bad=$((bad + 1))
  fi
  rm -rf "$tmp/a" "$tmp/b"
done
echo "$n scenarios, $bad differ"
[ $bad -eq 0 ]

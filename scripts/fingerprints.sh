#!/usr/bin/env bash
# Prints "scenario fingerprint" for every bundled scenario, to check that a refactor or an
# optimisation changed no result. Usage:
#   scripts/fingerprints.sh [WIRELAB_BINARY] > before.txt   # default target/release/wirelab
#   ... change ...; scripts/fingerprints.sh > after.txt; diff before.txt after.txt
# Runs are capped at DURATION simulated time (default 60s; DURATION=full keeps each
# scenario's own) so the whole set takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/wirelab}
dur=${DURATION:-60s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in scenarios/*.toml scenarios/*/*.toml; do
  # live-mode scenarios (TUN nodes) need `wirelab live` and root
  grep -q 'kind = "tun"' "$f" && continue
  args=(run "$f" --out "$tmp/out" --seed 1)
  [ "$dur" != full ] && args+=(--set "scenario.duration=$dur")
  if "$bin" "${args[@]}" >/dev/null 2>"$tmp/err"; then
    fp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fingerprint"])' "$tmp/out/summary.json")
  else
    fp="ERROR($(head -c 200 "$tmp/err" | tr '\n' ' '))"
  fi
  echo "$f $fp"
  rm -rf "$tmp/out"
done

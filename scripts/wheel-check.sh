#!/usr/bin/env bash
# `make wheel-check` (part of `make nightly`): the wheel `make wheel` builds installs and
# works for a colleague without Rust. Builds the abi3 wheel (timed), installs it into a
# fresh venv with no cargo/rustc on PATH, and runs the README's first command (after its
# `pip install .`) from that venv in an empty directory holding scenarios/: the quickstart
# run and its report. Prints the wheel's size and build time (README, "Before the first
# command"). Needs network access to PyPI for the wheel's dependencies.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/wirelab-wheel-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

cd "$ROOT"
rm -f dist/wirelab-*.whl
t0=$(date +%s.%N)
make --no-print-directory wheel PYTHON="$PYTHON" >/dev/null
t1=$(date +%s.%N)
whl=$(ls dist/wirelab-*-abi3-*.whl)
case "$whl" in *cp39-abi3-*) ;; *) echo "FAIL: $whl is not a cp39 abi3 wheel"; exit 1 ;; esac

# a PATH without any Rust toolchain: the venv's bin and the system's, nothing else
"$PYTHON" -m venv "$WORK/venv"
NORUST="$WORK/venv/bin:/usr/local/bin:/usr/bin:/bin"
for tool in cargo rustc maturin; do
    if PATH="$NORUST" command -v "$tool" >/dev/null; then
        echo "FAIL: $tool is on the PATH of the check ($(PATH="$NORUST" command -v "$tool"))"; exit 1
    fi
done
PATH="$NORUST" "$WORK/venv/bin/pip" install --quiet "$whl"

# the README's first command, as written after its `pip install .`
cmd=$(awk '/^```sh$/{f=1;next} f&&/^```/{exit} f' README.md)
case "$cmd" in "pip install . && "*) ;; *) echo "FAIL: README's first command changed: $cmd"; exit 1 ;; esac
cmd=${cmd#pip install . && }
mkdir "$WORK/user" && cp -r scenarios "$WORK/user/"
t2=$(date +%s.%N)
(cd "$WORK/user" && env -i HOME="$WORK" PATH="$NORUST" bash -c "$cmd" > "$WORK/out.txt" 2>&1) || { cat "$WORK/out.txt"; echo "FAIL: $cmd"; exit 1; }
t3=$(date +%s.%N)
test -s "$WORK/user/results/quickstart/report.html" || { echo "FAIL: no report.html"; exit 1; }
grep -q "fifo-cubic -> fifo-cubic-rx" "$WORK/out.txt" || { cat "$WORK/out.txt"; echo "FAIL: no connection lines"; exit 1; }
fp=$("$WORK/venv/bin/python" -c "import json,sys; print(json.load(open(sys.argv[1]))['fingerprint'])" "$WORK/user/results/quickstart/summary.json")
size=$(du -k "$whl" | cut -f1)
printf 'wheel %s: %.1f MB, built in %.0f s (load %s); README first command from the wheel venv: %.1f s, fingerprint %s\n' \
    "$(basename "$whl")" "$(echo "$size / 1024" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)" \
    "$(echo "$t3 - $t2" | bc -l)" "$fp"
echo "1 passed, 0 failed"

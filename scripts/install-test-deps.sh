#!/usr/bin/env bash
# Installs the Debian packages the test suite uses, if missing. Safe to re-run.
set -euo pipefail
need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
# packetdrill is built from ../shared/packetdrill to run our own scripts on the kernel
# (also needs cc and ip, below)
command -v bison >/dev/null 2>&1 || need+=(bison)
command -v flex >/dev/null 2>&1 || need+=(flex)
command -v make >/dev/null 2>&1 || need+=(make)
# a headless browser: the report test opens report.html and takes a screenshot
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-headless-shell >/dev/null 2>&1; then
  need+=(chromium-headless-shell)
fi
# live mode (docs/live.md): iproute2 for namespaces, usrsctp and a C compiler for the
# SCTP-over-UDP interop test, curl for the unmodified-program example
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
[ -f /usr/include/usrsctp.h ] || need+=(libusrsctp-dev)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${need[*]} missing and cannot be installed here; tests that need it are skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

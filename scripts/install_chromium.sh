#!/usr/bin/env bash
# Install the headless browser the report tests screenshot pages with (Debian
# package `chromium`). Idempotent: does nothing when a chromium is on PATH.
# Needs root (or passwordless sudo) and apt-get; elsewhere it says so and exits 1,
# and the browser tests then skip with that reason.
set -euo pipefail

for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null 2>&1; then
    echo "install_chromium: $(command -v "$name") already installed"
    exit 0
  fi
done

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: no apt-get here; install chromium with the system's package manager" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "install_chromium: not root and no passwordless sudo; run: sudo apt-get install -y chromium" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium
echo "install_chromium: $(command -v chromium) installed"

#!/usr/bin/env bash
# Make headless Chromium available for the browser tests (tests/browser).
#
# The test drives Debian's `chromium` package at /usr/bin/chromium (or $CHROMIUM) through
# Playwright; no browser is ever downloaded by Playwright itself. When the binary is missing, this
# script installs the package with apt-get, as root or through passwordless sudo. When it cannot
# (no apt-get, no root, no package index reachable) it says why and exits 0: the test then skips
# with that reason locally, and fails under CI (CI=true), where the browser test must run.
#
# usage: tools/ensure_chromium.sh
set -euo pipefail

chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ -x $chromium ]]; then
  exit 0
fi

why_not=""
if ! command -v apt-get > /dev/null; then
  why_not="apt-get is not available (not a Debian-based system)"
elif [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
  sudo=(sudo -n)
else
  why_not="installing it needs root (or passwordless sudo)"
fi
if [[ -n $why_not ]]; then
  echo "ensure_chromium: $chromium is missing and $why_not; install Debian's 'chromium' package" \
       "to run the browser test" >&2
  exit 0
fi

echo "ensure_chromium: $chromium is missing; installing Debian's chromium package with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium; }; then
  echo "ensure_chromium: apt-get could not install chromium (see above)" >&2
  exit 0
fi
if [[ ! -x $chromium ]]; then
  echo "ensure_chromium: the chromium package is installed but $chromium does not exist" >&2
fi

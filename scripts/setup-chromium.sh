#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests (playwright-core drives it; Playwright never downloads a
# browser here). Idempotent: returns at once when the binary exists. Prints nothing else on success.
set -euo pipefail

log() { echo "[setup-chromium] $*"; }
die() { echo "[setup-chromium] error: $*" >&2; exit 1; }

for candidate in /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -x "$candidate" ]; then
    log "chromium: $candidate ready"
    exit 0
  fi
done

[ "$(id -u)" -eq 0 ] ||
  die "Chromium (Debian package chromium) is needed by the browser tests and installing it needs root. Run as root: apt-get install chromium"
command -v apt-get >/dev/null || die "apt-get not found: install Chromium by hand (CHROMIUM_PATH points the tests at it)"

LOG="${TMPDIR:-/tmp}/setup-chromium-apt.log"
log "chromium: installing (log: $LOG)"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 \
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } >"$LOG" 2>&1; then
  tail -n 30 "$LOG" >&2
  die "apt-get install chromium failed (full log: $LOG)"
fi
log "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo installed)"

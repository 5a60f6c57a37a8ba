#!/usr/bin/env bash
# Installs Debian's Dovecot IMAP server for the mail connector tests (test/support/dovecot.ts starts a private
# instance per test). Idempotent: returns at once when /usr/sbin/dovecot exists.
# The package's own system service must not run: the tests want no shared server on the machine, and a
# system Dovecot would hold ports 143/993. A policy-rc.d that refuses starts covers the install itself
# (invoke-rc.d consults it); where the package was started anyway (systemd without policy-rc.d), it is stopped.
set -euo pipefail

log() { echo "[setup-dovecot] $*"; }
die() { echo "[setup-dovecot] error: $*" >&2; exit 1; }

if [ -x /usr/sbin/dovecot ]; then
  log "dovecot: /usr/sbin/dovecot ready"
  exit 0
fi

[ "$(id -u)" -eq 0 ] ||
  die "Dovecot (Debian package dovecot-imapd) is needed by the mail connector tests and installing it needs root. Run as root: apt-get install dovecot-imapd"
command -v apt-get >/dev/null || die "apt-get not found: install Dovecot's IMAP server (dovecot-imapd) by hand"

POLICY=/usr/sbin/policy-rc.d
placed_policy=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\n# Placed by scripts/setup-dovecot.sh while it installs dovecot-imapd.\nexit 101\n' >"$POLICY"
  chmod 755 "$POLICY"
  placed_policy=1
fi
cleanup() { if [ "$placed_policy" -eq 1 ]; then rm -f "$POLICY"; fi; }
trap cleanup EXIT

# apt's chatter (debconf, needrestart) goes to a log that is shown only when the install fails.
LOG="${TMPDIR:-/tmp}/setup-dovecot-apt.log"
log "dovecot: installing dovecot-imapd (log: $LOG)"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 \
  apt-get install -y -qq dovecot-imapd; } >"$LOG" 2>&1; then
  tail -n 30 "$LOG" >&2
  die "apt-get install dovecot-imapd failed (full log: $LOG)"
fi

# Belt and braces: a system instance may have been started despite the policy (or existed before).
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  systemctl disable --now dovecot.service dovecot.socket >/dev/null 2>&1 || true
fi
if [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null; then
  service dovecot stop >/dev/null 2>&1 || /usr/sbin/dovecot stop >/dev/null 2>&1 || true
fi

[ -x /usr/sbin/dovecot ] || die "dovecot-imapd installed but /usr/sbin/dovecot is missing"
log "dovecot: $(/usr/sbin/dovecot --version) installed (system service not running)"

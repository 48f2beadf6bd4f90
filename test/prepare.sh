#!/usr/bin/env bash
# Runs before `npm test`: makes sure what the tests talk to is here, or says plainly what is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
if ! node -e "require('net').connect(5432,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then
  echo "tests need PostgreSQL on 127.0.0.1:5432 (trust auth), or AULA_TEST_DATABASE_URL" >&2; fail=1
fi
if ! node -e "require('net').connect(6379,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then
  echo "tests need Redis on 127.0.0.1:6379, or AULA_TEST_REDIS_URL" >&2; fail=1
fi
if [ ! -x node_modules/mediasoup/worker/out/Release/mediasoup-worker ]; then
  bash media/build-worker.sh || fail=1
fi
chromium_bin=${AULA_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium_bin" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's chromium for the browser tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null || fail=1
  else
    echo "browser tests need Chromium at $chromium_bin (or set AULA_CHROMIUM)" >&2; fail=1
  fi
fi
# recordings are composed with Debian's ffmpeg (and the tests read them with ffprobe)
if [ ! -x /usr/bin/ffmpeg ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's ffmpeg for the recording tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null || fail=1
  else
    echo "recording tests need ffmpeg at /usr/bin/ffmpeg" >&2; fail=1
  fi
fi
# the room's reactions are emoji: pages (and their screenshots) show them as a student's device would
if [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's emoji font for the browser tests"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-noto-color-emoji >/dev/null || fail=1
fi
# the relay tests run Debian's coturn with flags of their own (never its system service)
if [ ! -x "${AULA_TURNSERVER:-/usr/bin/turnserver}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's coturn for the relay tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends coturn iproute2 >/dev/null || fail=1
  else
    echo "relay tests need coturn's turnserver at /usr/bin/turnserver (or set AULA_TURNSERVER)" >&2; fail=1
  fi
fi
# transcription (docs/ai-notes.md): Debian's PocketSphinx with its US English model; espeak-ng and flite speak the test clips
if ! command -v pocketsphinx_continuous >/dev/null || [ ! -e /usr/share/pocketsphinx/model/en-us/en-us/mdef ] || ! command -v espeak-ng >/dev/null || ! command -v flite >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's pocketsphinx, pocketsphinx-en-us, espeak-ng and flite for the transcription tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pocketsphinx pocketsphinx-en-us espeak-ng flite >/dev/null || fail=1
  else
    echo "transcription tests need Debian's pocketsphinx, pocketsphinx-en-us, espeak-ng and flite" >&2; fail=1
  fi
fi
exit $fail

#!/usr/bin/env bash
# Build mediasoup's C++ worker (pinned 3.12.16) against Debian 12's system
# libraries, cache the binary outside the checkout, and install it where the
# mediasoup package looks for it (worker/out/Release/mediasoup-worker).
# libsrtp2 is the exception: Debian's binary is NSS-backed and ~2.4x slower per
# SRTP packet, so the worker is linked statically to libsrtp2 built with OpenSSL
# from Debian's own source package (fetched through a deb-src apt entry).
#
# Usage (from the repo root, after `npm ci`):   bash media/build-worker.sh
#
# Environment:
#   AULA_MEDIASOUP_DIR     mediasoup package dir (default: <repo>/node_modules/mediasoup)
#   AULA_CACHE_DIR         cache root (default: /var/cache/aula)
#   AULA_WORKER_REBUILD=1  ignore the caches (worker and libsrtp2) and rebuild both
#                          (the results are re-cached)
#
# See media/README-worker.md for the why and the details.
set -euo pipefail

readonly MS_VERSION="3.12.16"
readonly MESON_VERSION="1.12.1"
# Bump when the build recipe below changes in a way that changes the binary.
readonly RECIPE_VERSION="2"

# Debian packages: build tools + the -dev libraries that replace mediasoup's wraps.
# libsrtp2-dev is not linked (see SRTP_* below); its installed version names the
# Debian source package version that is fetched and built, and feeds the cache key.
readonly TOOL_PKGS=(g++ make pkg-config python3 ninja-build patch)
readonly LIB_PKGS=(libuv1-dev libssl-dev libsrtp2-dev libabsl-dev nlohmann-json3-dev libusrsctp-dev)

# libsrtp2 from Debian's source package, configured for OpenSSL crypto, linked statically.
readonly SRTP_SRC_PKG="libsrtp2"
readonly SRTP_CONFIGURE_FLAGS=(--enable-openssl)
# The deb-src entry this script adds (a copy of the machine's Debian entry).
readonly APT_SRC_FILE="/etc/apt/sources.list.d/aula-deb-src.sources"

log() { printf '[mediasoup-worker] %s\n' "$*"; }
die() { printf '[mediasoup-worker] ERROR: %s\n' "$*" >&2; exit 1; }

START_TS=$(date +%s)
elapsed() { echo "$(( $(date +%s) - START_TS ))s"; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
MS_DIR=${AULA_MEDIASOUP_DIR:-$REPO_ROOT/node_modules/mediasoup}
CACHE_ROOT=${AULA_CACHE_DIR:-/var/cache/aula}
CACHE_DIR="$CACHE_ROOT/mediasoup-worker"

# --- 1. locate mediasoup ------------------------------------------------------
[[ -f "$MS_DIR/package.json" ]] ||
  die "mediasoup not found at $MS_DIR (run 'npm ci' first, or set AULA_MEDIASOUP_DIR)"
MS_DIR=$(cd "$MS_DIR" && pwd)
found_version=$(node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' \
  "$MS_DIR/package.json" 2>/dev/null ||
  grep -o '"version"[[:space:]]*:[[:space:]]*"[^"]*"' "$MS_DIR/package.json" | head -n1 | cut -d'"' -f4)
[[ "$found_version" == "$MS_VERSION" ]] ||
  die "mediasoup at $MS_DIR is version '${found_version:-unknown}', this script only builds $MS_VERSION (pin it exactly in package.json)"
[[ -f "$MS_DIR/worker/meson.build" ]] || die "$MS_DIR/worker/meson.build missing: incomplete mediasoup package"
DEST="$MS_DIR/worker/out/Release/mediasoup-worker"
log "mediasoup $MS_VERSION at $MS_DIR"

# --- 2. Debian packages (only installs what is missing) --------------------------
apt_updated=0
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
ensure_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing Debian packages: ${missing[*]}"
  command -v apt-get >/dev/null || die "apt-get not available; install manually: ${missing[*]}"
  local sudo=("${as_root[@]}")
  local apt_log
  apt_log=$(mktemp "${TMPDIR:-/tmp}/aula-apt.XXXXXX")
  if ((apt_updated == 0)); then
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$apt_log" 2>&1 ||
      { tail -n 20 "$apt_log" >&2; rm -f "$apt_log"; die "apt-get update failed"; }
    apt_updated=1
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >"$apt_log" 2>&1 ||
    { tail -n 20 "$apt_log" >&2; rm -f "$apt_log"; die "apt-get install failed for: ${missing[*]}"; }
  rm -f "$apt_log"
}
ensure_pkgs "${TOOL_PKGS[@]}" "${LIB_PKGS[@]}"

# --- 3. cache key -------------------------------------------------------------------
lib_versions=$(dpkg-query -W -f='${Package}=${Version}\n' "${LIB_PKGS[@]}" | sort)
ARCH=$(dpkg --print-architecture)
# The libsrtp2 source version to build = the source version of the installed libsrtp2-dev.
SRTP_VERSION=$(dpkg-query -W -f='${source:Version}' libsrtp2-dev)
[[ -n "$SRTP_VERSION" ]] || die "cannot read the version of libsrtp2-dev"
srtp_key_inputs=$(printf 'recipe=%s\narch=%s\nsource=%s=%s\nconfigure=%s\n%s\n' \
  "$RECIPE_VERSION" "$ARCH" "$SRTP_SRC_PKG" "$SRTP_VERSION" "${SRTP_CONFIGURE_FLAGS[*]}" \
  "$(dpkg-query -W -f='${Package}=${Version}\n' libssl-dev)")
srtp_key_hash=$(printf '%s' "$srtp_key_inputs" | sha256sum | cut -c1-16)
SRTP_DIR="$CACHE_DIR/libsrtp2-${SRTP_VERSION}-openssl-$srtp_key_hash"
# Our fixes to the worker's source (patches/mediasoup+<version>.patch, applied by patch-package at
# npm install): the binary must be built from the patched source, and a changed patch is a new binary.
WORKER_PATCH="$REPO_ROOT/patches/mediasoup+$MS_VERSION.patch"
patch_hash=none
if [[ -f "$WORKER_PATCH" ]]; then
  patch -R -p1 --dry-run -s -f -d "$(dirname "$(dirname "$MS_DIR")")" <"$WORKER_PATCH" >/dev/null 2>&1 ||
    die "$WORKER_PATCH is not applied to $MS_DIR (run 'npx patch-package' or 'npm ci' first)"
  patch_hash=$(sha256sum "$WORKER_PATCH" | cut -c1-16)
fi
key_inputs=$(printf 'recipe=%s\nmediasoup=%s\narch=%s\n%s\nlibsrtp2-static=%s=%s %s\npatch=%s\n' \
  "$RECIPE_VERSION" "$MS_VERSION" "$ARCH" "$lib_versions" \
  "$SRTP_SRC_PKG" "$SRTP_VERSION" "${SRTP_CONFIGURE_FLAGS[*]}" "$patch_hash")
key_hash=$(printf '%s' "$key_inputs" | sha256sum | cut -c1-16)
CACHED_BIN="$CACHE_DIR/mediasoup-worker-$MS_VERSION-$key_hash"

check_binary() { # all shared libraries resolvable?
  local bin=$1 missing
  missing=$(ldd "$bin" 2>&1 | grep 'not found' || true)
  [[ -z "$missing" ]] || { printf '%s\n' "$missing" >&2; return 1; }
}

install_binary() { # atomically put $1 at $DEST
  local src=$1
  if [[ -x "$DEST" ]] && cmp -s "$src" "$DEST"; then
    log "already installed at $DEST"
    return 0
  fi
  mkdir -p "$(dirname "$DEST")"
  local tmp
  tmp=$(mktemp "$(dirname "$DEST")/.mediasoup-worker.XXXXXX")
  cp "$src" "$tmp"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$DEST"
  log "installed $DEST"
}

if [[ "${AULA_WORKER_REBUILD:-0}" != "1" && -f "$CACHED_BIN" ]]; then
  if check_binary "$CACHED_BIN"; then
    log "cache hit: $CACHED_BIN"
    install_binary "$CACHED_BIN"
    log "done in $(elapsed)"
    exit 0
  fi
  log "cached binary has unresolved libraries; rebuilding"
fi
if [[ "${AULA_WORKER_REBUILD:-0}" == "1" ]]; then
  log "rebuild forced by AULA_WORKER_REBUILD=1 (key $key_hash); building from source, takes a few minutes"
else
  log "cache miss (key $key_hash); building from source, takes a few minutes"
fi

# --- 4. meson >= 1.1 (Debian 12 ships 1.0.1) ------------------------------------------
mkdir -p "$CACHE_DIR" "$CACHE_ROOT/tools"
MESON_DIR="$CACHE_ROOT/tools/meson-$MESON_VERSION"
relax_meson_check=0
meson_cmd=()
if [[ -f "$MESON_DIR/.ok" ]]; then
  meson_cmd=(env "PYTHONPATH=$MESON_DIR" python3 "$MESON_DIR/bin/meson")
else
  log "installing meson $MESON_VERSION with pip --target $MESON_DIR"
  rm -rf "$MESON_DIR.tmp"
  if python3 -m pip install --quiet --disable-pip-version-check --no-deps \
       --target "$MESON_DIR.tmp" "meson==$MESON_VERSION" >/dev/null 2>&1 &&
     PYTHONPATH="$MESON_DIR.tmp" python3 -c 'import mesonbuild' 2>/dev/null; then
    rm -rf "$MESON_DIR"
    mv "$MESON_DIR.tmp" "$MESON_DIR"
    touch "$MESON_DIR/.ok"
    meson_cmd=(env "PYTHONPATH=$MESON_DIR" python3 "$MESON_DIR/bin/meson")
  else
    rm -rf "$MESON_DIR.tmp"
    log "pip meson unavailable; falling back to Debian's meson with the version check relaxed"
    ensure_pkgs meson
    meson_cmd=(meson)
    relax_meson_check=1
  fi
fi
log "meson $("${meson_cmd[@]}" --version)"

BUILD_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/aula-mediasoup-build.XXXXXX")
cleanup() { rm -rf "$BUILD_ROOT"; }
trap cleanup EXIT

# --- 5. libsrtp2 with OpenSSL, from Debian's source package --------------------------------
# Debian's libsrtp2-1 binary is built against NSS; the OpenSSL build costs ~2.4x less CPU
# per SRTP packet (see media/README-worker.md). Built once per source version into
# $SRTP_DIR (include/srtp2/*.h + lib/libsrtp2.a) and linked statically into the worker.
srtp_source_listed() {
  apt-cache showsrc --only-source "$SRTP_SRC_PKG" 2>/dev/null | grep -qx "Version: $SRTP_VERSION"
}

# Adds a deb-src entry next to the machine's Debian entry (same URIs, suites, components,
# keyring), in its own file; rewritten only when its content would change.
ensure_deb_src() {
  local want=""
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    want=$(sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources)
  elif [[ -f /etc/apt/sources.list ]] && grep -q '^deb[[:space:]]' /etc/apt/sources.list; then
    # One-line format: Types/URIs/Suites/Components per `deb [opts] uri suite comp...` line.
    # (Debian's own lines only: a third-party repository may publish no sources.)
    want=$(awk '$1 == "deb" && /debian\.org|debian\/? / {
        i = 2; signed = ""
        if ($2 ~ /^\[/) { while ($i !~ /\]$/) { if ($i ~ /signed-by=/) signed = $i; i++ }
                          if ($i ~ /signed-by=/) signed = $i; i++ }
        gsub(/.*signed-by=|\]/, "", signed)
        printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents:", $i, $(i + 1)
        for (j = i + 2; j <= NF; j++) printf " %s", $j
        printf "\n"
        if (signed != "") printf "Signed-By: %s\n", signed
        printf "\n" }' /etc/apt/sources.list)
  fi
  [[ -n "$want" ]] ||
    die "no Debian apt entry (/etc/apt/sources.list.d/debian.sources or deb lines in /etc/apt/sources.list) to derive a deb-src entry from"
  if [[ -f "$APT_SRC_FILE" ]] && [[ "$(cat "$APT_SRC_FILE")" == "$want" ]]; then
    log "deb-src entry present: $APT_SRC_FILE"
  else
    log "adding deb-src entry $APT_SRC_FILE"
    printf '%s\n' "$want" | "${as_root[@]}" tee "$APT_SRC_FILE" >/dev/null ||
      die "cannot write $APT_SRC_FILE"
  fi
  local apt_log
  apt_log=$(mktemp "${TMPDIR:-/tmp}/aula-apt.XXXXXX")
  log "apt-get update (for the deb-src index)"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$apt_log" 2>&1 ||
    { tail -n 20 "$apt_log" >&2; rm -f "$apt_log"; die "apt-get update failed"; }
  rm -f "$apt_log"
  apt_updated=1
}

build_libsrtp() {
  local work="$BUILD_ROOT/libsrtp2" t0 src stage
  t0=$(date +%s)
  ensure_pkgs dpkg-dev # dpkg-source, which `apt-get source` runs to unpack and patch
  srtp_source_listed || ensure_deb_src
  srtp_source_listed ||
    die "apt has no source package $SRTP_SRC_PKG=$SRTP_VERSION (the version of the installed libsrtp2-dev) in its deb-src index; if Debian has moved on, upgrade it ('apt-get install --only-upgrade libsrtp2-dev') and rerun. Not falling back to Debian's NSS-backed libsrtp2."
  mkdir -p "$work"
  log "fetching Debian source $SRTP_SRC_PKG $SRTP_VERSION (apt-get source)"
  (cd "$work" && apt-get source -qq --only-source "$SRTP_SRC_PKG=$SRTP_VERSION") >"$work.fetch.log" 2>&1 ||
    { tail -n 20 "$work.fetch.log" >&2; die "apt-get source $SRTP_SRC_PKG=$SRTP_VERSION failed (log above); not falling back to Debian's NSS-backed libsrtp2"; }
  src=$(find "$work" -mindepth 2 -maxdepth 2 -name configure -printf '%h\n' | head -n1)
  [[ -n "$src" ]] || die "apt-get source unpacked no $SRTP_SRC_PKG tree with a configure script under $work"
  log "building libsrtp2 $SRTP_VERSION: ./configure ${SRTP_CONFIGURE_FLAGS[*]} && make"
  (cd "$src" && ./configure "${SRTP_CONFIGURE_FLAGS[@]}") >"$work.configure.log" 2>&1 ||
    { tail -n 30 "$work.configure.log" >&2; die "libsrtp2 configure failed (log above)"; }
  if ! grep -q '^#define OPENSSL 1' "$src/crypto/include/config.h" ||
     grep -q '^#define NSS 1' "$src/crypto/include/config.h"; then
    die "libsrtp2 configure did not select OpenSSL crypto ($src/crypto/include/config.h)"
  fi
  # The static library, plus libsrtp's known-answer/self test driver, run below.
  make -C "$src" -j "$JOBS" libsrtp2.a test/srtp_driver >"$work.make.log" 2>&1 ||
    { tail -n 40 "$work.make.log" >&2; die "libsrtp2 make failed (log above)"; }
  "$src/test/srtp_driver" -v >"$work.test.log" 2>&1 ||
    { tail -n 20 "$work.test.log" >&2; die "libsrtp2 self test (test/srtp_driver -v) failed (log above)"; }
  # Stage headers + libsrtp2.a, then move into the cache atomically.
  stage=$(mktemp -d "$CACHE_DIR/.libsrtp2.XXXXXX")
  make -C "$src" install prefix="$stage" >"$work.install.log" 2>&1 ||
    { tail -n 20 "$work.install.log" >&2; rm -rf "$stage"; die "libsrtp2 make install failed (log above)"; }
  rm -rf "$stage/lib/pkgconfig" # points at the staging dir; the worker links libsrtp2.a by path
  [[ -f "$stage/include/srtp2/srtp.h" && -f "$stage/lib/libsrtp2.a" ]] ||
    { rm -rf "$stage"; die "libsrtp2 install produced no include/srtp2/srtp.h + lib/libsrtp2.a"; }
  printf '%s\n' "$srtp_key_inputs" >"$stage/.inputs"
  touch "$stage/.ok"
  chmod 0755 "$stage" # mktemp -d made it 0700
  rm -rf "$SRTP_DIR"
  mv -T "$stage" "$SRTP_DIR"
  log "libsrtp2 built in $(( $(date +%s) - t0 ))s, cached $SRTP_DIR"
}

JOBS=$(nproc 2>/dev/null || echo 2)
if [[ "${AULA_WORKER_REBUILD:-0}" != "1" && -f "$SRTP_DIR/.ok" ]]; then
  log "libsrtp2 cache hit: $SRTP_DIR"
else
  build_libsrtp
fi

# --- 6. build tree: a copy of worker/ with fake subprojects -----------------------------
SRC="$BUILD_ROOT/worker"
mkdir -p "$SRC"
tar -C "$MS_DIR/worker" --exclude=./out --exclude=./subprojects/packagecache -cf - . | tar -C "$SRC" -xf -
if ((relax_meson_check)); then
  sed -i "s/meson_version: *'>= *1\.1\.0',\?//" "$SRC/meson.build"
fi

# Meson never downloads a wrap whose `directory` already exists: create it with a
# meson.build exposing the Debian library under the variable names mediasoup reads.
wrap_dir() {
  local wrap="$SRC/subprojects/$1.wrap" d
  [[ -f "$wrap" ]] || die "missing $wrap"
  d=$(sed -n 's/^directory[[:space:]]*=[[:space:]]*//p' "$wrap" | head -n1 | tr -d '[:space:]')
  [[ -n "$d" ]] || die "no directory= in $wrap"
  rm -rf "$SRC/subprojects/$d"
  mkdir -p "$SRC/subprojects/$d"
  printf '%s\n' "$SRC/subprojects/$d"
}
# fake_subproject WRAP MESON_BUILD_BODY [OPTION...]
fake_subproject() {
  local name=$1 body=$2 dir o
  shift 2
  dir=$(wrap_dir "$name")
  printf "project('%s-system', 'c')\n%s\n" "$name" "$body" >"$dir/meson.build"
  # Source for the stub *_lib targets (read only by the unbuilt shared-library target).
  printf 'typedef int aula_system_stub;\n' >"$dir/stub.c"
  : >"$dir/meson_options.txt"
  for o in "$@"; do
    printf "option('%s', type: 'string', value: '')\n" "$o" >>"$dir/meson_options.txt"
  done
}

fake_subproject openssl "
openssl_dep = declare_dependency(dependencies: [
  dependency('libssl', version: '>= 3.0', method: 'pkg-config'),
  dependency('libcrypto', version: '>= 3.0', method: 'pkg-config'),
])
libssl_dep = openssl_dep
libcrypto_dep = openssl_dep
libcrypto_lib = static_library('crypto_system_stub', 'stub.c', build_by_default: false)
libssl_lib = static_library('ssl_system_stub', 'stub.c', build_by_default: false)"

fake_subproject nlohmann_json "
nlohmann_json_dep = dependency('nlohmann_json', version: '>= 3.10', method: 'pkg-config')"

fake_subproject libuv "
libuv_dep = dependency('libuv', version: '>= 1.44', method: 'pkg-config')
libuv = static_library('uv_system_stub', 'stub.c', build_by_default: false)" \
  build_tests build_benchmarks

# The OpenSSL-backed libsrtp2.a from step 5 (not Debian's NSS-backed .so); mediasoup
# includes <srtp.h>, installed under include/srtp2. libsrtp2.a calls into libcrypto.
fake_subproject libsrtp2 "
libsrtp2_dep = declare_dependency(
  compile_args: ['-I$SRTP_DIR/include/srtp2'],
  link_args: ['$SRTP_DIR/lib/libsrtp2.a'],
  dependencies: dependency('libcrypto', version: '>= 3.0', method: 'pkg-config'))
libsrtp2 = static_library('srtp2_system_stub', 'stub.c', build_by_default: false)" \
  crypto-library crypto-library-kdf tests

fake_subproject usrsctp "
usrsctp_dep = dependency('usrsctp', method: 'pkg-config')
usrsctp = static_library('usrsctp_system_stub', 'stub.c', build_by_default: false)" \
  sctp_build_programs

fake_subproject abseil-cpp "
absl_container_dep = declare_dependency(dependencies: [
  dependency('absl_flat_hash_map'),
  dependency('absl_flat_hash_set'),
  dependency('absl_node_hash_map'),
  dependency('absl_node_hash_set'),
  dependency('absl_btree'),
  dependency('absl_inlined_vector'),
  dependency('absl_fixed_array'),
  dependency('absl_memory'),
])
absl_strings_dep = dependency('absl_strings')
absl_types_dep = declare_dependency(dependencies: [
  dependency('absl_optional'),
  dependency('absl_variant'),
  dependency('absl_span'),
])
absl_container_lib = static_library('absl_system_stub', 'stub.c', build_by_default: false)"

# Tests only (mediasoup-worker-test is not built): optional.
fake_subproject catch2 "
catch2_dep = dependency('catch2', method: 'pkg-config', required: false)"

# --- 7. configure + compile ----------------------------------------------------------------
BUILD="$BUILD_ROOT/build"
log "meson setup"
"${meson_cmd[@]}" setup --buildtype release -Db_ndebug=true --wrap-mode=nodownload \
  "$BUILD" "$SRC" >"$BUILD_ROOT/setup.log" 2>&1 ||
  { tail -n 40 "$BUILD_ROOT/setup.log" >&2; die "meson setup failed (log above)"; }
log "compiling with $JOBS jobs"
"${meson_cmd[@]}" compile -C "$BUILD" -j "$JOBS" mediasoup-worker >"$BUILD_ROOT/compile.log" 2>&1 ||
  { tail -n 60 "$BUILD_ROOT/compile.log" >&2; die "compile failed (log above)"; }
BIN="$BUILD/mediasoup-worker"
[[ -x "$BIN" ]] || die "build produced no $BIN"
check_binary "$BIN" || die "built binary has unresolved shared libraries"
if ldd "$BIN" | grep -q 'libsrtp2'; then
  die "built binary links a shared libsrtp2 instead of $SRTP_DIR/lib/libsrtp2.a"
fi
log "built in $(elapsed) ($(du -h "$BIN" | cut -f1))"

# --- 8. cache atomically, then install --------------------------------------------------
tmp_cache=$(mktemp "$CACHE_DIR/.mediasoup-worker.XXXXXX")
cp "$BIN" "$tmp_cache"
chmod 0755 "$tmp_cache"
printf '%s\n' "$key_inputs" >"$tmp_cache.inputs"
mv -f "$tmp_cache.inputs" "$CACHED_BIN.inputs"
mv -f "$tmp_cache" "$CACHED_BIN"
log "cached $CACHED_BIN"
install_binary "$CACHED_BIN"
log "done in $(elapsed)"

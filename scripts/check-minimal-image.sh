#!/bin/bash
# check-minimal-image.sh [--full]: proves README's set-up step on a fresh Debian 12. Makes a minbase
# chroot (mmdebstrap, else debootstrap), copies this working tree into it (the files a clone would
# hold), mounts the host's CUDA Toolkit read-only at /usr/local/cuda, runs `scripts/install-deps.sh
# test` there, then checks that `make test` finds everything: make configures with the system's
# Google Benchmark and GoogleTest (not fetched), Doxygen and python3; the host tests build and pass;
# the site builds and opens in headless Chromium with MathJax; the plot tables pass. Here a test
# SKIPPED for want of a dependency is a failure.
#   --full  run the whole `make test` in the chroot instead (the whole build: minutes more).
# Needs root. Skips (exit 0, with a message) where chroot or mount is impossible.
# MINIMAL_IMAGE_MIRROR overrides the Debian mirror (default: the host's apt mirror).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
full=0
case "${1:-}" in --full) full=1 ;; "") ;; *) echo "usage: $0 [--full]" >&2; exit 2 ;; esac
say() { echo "check-minimal-image.sh: $*"; }
skip() { say "SKIPPED: $*"; exit 0; }
die() { say "FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount); CI runs it as root"
cuda=$(readlink -f /usr/local/cuda 2>/dev/null || true)
[ -x "$cuda/bin/nvcc" ] || skip "no CUDA Toolkit in /usr/local/cuda to lend the chroot"
command -v git >/dev/null || skip "needs git on the host (to copy what a clone holds)"
chroot / true 2>/dev/null || skip "chroot is not permitted here (no CAP_SYS_CHROOT)"
# mmdebstrap: apt's parallel downloads make it about twice as fast as debootstrap.
if ! command -v mmdebstrap >/dev/null && ! command -v debootstrap >/dev/null; then
  command -v apt-get >/dev/null || skip "neither mmdebstrap nor debootstrap, and no apt-get to install one"
  say "installing mmdebstrap on the host"
  { apt-get install -y -qq mmdebstrap || { apt-get update -qq && apt-get install -y -qq mmdebstrap; }; } >/dev/null ||
    die "could not install mmdebstrap (apt-get install mmdebstrap)"
fi

# The host's own Debian mirror (a local mirror or proxy may be all that is reachable): the first
# URL ending in /debian in apt's sources, one-line or deb822, comments dropped.
host_mirror() {
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
    sed 's/#.*//' | tr -s ' \t' '\n' |
    awk '/^https?:\/\/.*\/debian\/*$/ && !m {m = $0} END {print m ? m : "http://deb.debian.org/debian"}'
}
mirror=${MINIMAL_IMAGE_MIRROR:-$(host_mirror)}

work=$(mktemp -d "${TMPDIR:-/tmp}/minimal-image.XXXXXX")
img=$work/root
cleanup() {
  for m in "$img/usr/local/cuda" "$img/dev/pts" "$img/proc"; do
    if mountpoint -q "$m" 2>/dev/null; then umount "$m" || umount -l "$m" || true; fi
  done
  # Never rm -rf across a mount that is still there (it would reach the host's files).
  if grep -q " $work/" /proc/mounts; then say "left $work in place: something is still mounted in it" >&2
  else rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP  # through exit, so that cleanup unmounts
mkdir -p "$work/probe-a" "$work/probe-b"
mount --bind "$work/probe-a" "$work/probe-b" 2>/dev/null || skip "mount is not permitted here (no CAP_SYS_ADMIN)"
umount "$work/probe-b"

# The tree as it is now (a build running beside this one must not change what is checked): tracked
# files as they are in this tree, plus untracked ones git does not ignore. A clone's view.
mkdir "$work/src"
git -C "$root" ls-files -z --cached --others --exclude-standard |
  tar -C "$root" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$work/src" -xf -

start=$SECONDS
if command -v mmdebstrap >/dev/null; then
  say "mmdebstrap --variant=minbase bookworm from $mirror"
  mmdebstrap --variant=minbase --quiet bookworm "$img" "$mirror" >"$work/bootstrap.log" 2>&1 || bad=1
else
  say "debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$img" "$mirror" >"$work/bootstrap.log" 2>&1 || bad=1
fi
[ -z "${bad:-}" ] || { tail -n 20 "$work/bootstrap.log" >&2; die "could not make the minimal image (log above)"; }
say "minimal image ready ($((SECONDS - start)) s)"

# What the image gets from the host is what a fresh machine gets from its admin: name resolution,
# the local CA certificates (a TLS-inspecting proxy needs them for npm), the CUDA Toolkit.
cp -L /etc/resolv.conf "$img/etc/resolv.conf"
mkdir -p "$img/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$img/usr/local/share/ca-certificates/" 2>/dev/null || true
# Speed only: no fsync per file, and no docs or man pages (as in Docker's debian:bookworm-slim).
printf 'force-unsafe-io\npath-exclude=/usr/share/doc/*\npath-exclude=/usr/share/man/*\n' \
  >"$img/etc/dpkg/dpkg.cfg.d/check-minimal-image"
mkdir -p "$img/usr/local/cuda"
mount --bind "$cuda" "$img/usr/local/cuda"
mount -o remount,bind,ro "$img/usr/local/cuda"
mount -t proc proc "$img/proc"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$img/dev/pts" 2>/dev/null || true  # quiets apt
mv "$work/src" "$img/src"

# A clean environment: nothing of the host's PATH, PYTHON or CUDAARCHS leaks in; proxies do.
envs=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [ -z "${!v:-}" ] || envs+=("$v=${!v}")
done
# The steps inside the image, single-quoted: they expand there.
# shellcheck disable=SC2016
chroot "$img" /usr/bin/env -i "${envs[@]}" FULL=$full /bin/bash -euo pipefail -c '
cd /src
t0=$SECONDS
echo "== scripts/install-deps.sh test (README, step 1)"
scripts/install-deps.sh test
for tool in make cmake g++ python3 doxygen chromium; do
  command -v $tool >/dev/null || { echo "FAILED: scripts/install-deps.sh test did not install $tool"; exit 1; }
done
echo "== installed in $((SECONDS - t0)) s"
if [ "$FULL" = 1 ]; then
  echo "== make test (README, step 2)"; make test; exit 0
fi
echo "== make deps-test configure (what make test does first)"
make deps-test configure 2>&1 | tee /tmp/configure.log
if grep -E "fetching|not found|Could NOT find" /tmp/configure.log | grep -v cuDNN; then  # cuDNN: optional
  echo "FAILED: the configure step above did not find a dependency in the system"; exit 1
fi
echo "== the host tests (g++, GoogleTest)"
cmake --build build --target unit_tests
bin/unit_tests --gtest_brief=1
echo "== the site in Chromium with MathJax, the plot tables (python3, matplotlib)"
cd build
ctest --output-on-failure -R "^(docs\.build|docs\.browser|plots\.tables|peer_torch\.fill_hash)$" | tee /tmp/ctest.log
if grep -qE "Skipped|Not Run|No tests were found" /tmp/ctest.log; then
  echo "FAILED: a test was skipped for want of a dependency (above)"; exit 1
fi
' || die "the set-up from a minimal image is broken (see above)"
say "OK: a minimal Debian 12 with the CUDA Toolkit has what make test needs ($((SECONDS - start)) s)"

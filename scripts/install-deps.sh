#!/bin/bash
# install-deps.sh [build|test|docs|plots|all]...: installs what the course needs and is missing.
# Idempotent: packages already present are left alone, and nothing is done when all are there.
# Run it before the first make (README's first step): a minimal image has no make to call it.
#   build  make, cmake, ninja, g++, ccache, Google Benchmark, GoogleTest (Debian/Ubuntu packages)
#   docs   doxygen, and MathJax 3 from npm into .tools/ (no CDN at build time)
#   plots  python3 with matplotlib and numpy
#   test   build + docs + plots + Chromium (make test builds the site, opens it in a headless
#          browser, and regenerates the figures)
# The CUDA Toolkit itself is not installed here: get it from NVIDIA (nvcc must be on PATH or in
# /usr/local/cuda/bin).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(all)

# A minimal Debian image has none of these, make included (scripts/check-minimal-image.sh proves it).
build=(make cmake ninja-build g++ ccache libbenchmark-dev libgtest-dev libgmock-dev)
docs=(doxygen npm ca-certificates)  # npm fetches MathJax over https
plots=(python3 python3-matplotlib python3-numpy)
pkgs=()
need_mathjax=0
for w in "${want[@]}"; do
  case "$w" in
    build) pkgs+=("${build[@]}") ;;
    docs) pkgs+=("${docs[@]}"); need_mathjax=1 ;;
    plots) pkgs+=("${plots[@]}") ;;
    test|all) pkgs+=("${build[@]}" "${docs[@]}" "${plots[@]}" chromium); need_mathjax=1 ;;
    *) echo "install-deps.sh: unknown component '$w' (build, test, docs, plots, all)" >&2; exit 2 ;;
  esac
done

missing=()
if command -v dpkg >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    # Installed, not merely known to dpkg (a removed package keeps its config-files record).
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  # npm is only needed to fetch MathJax once.
  if [ $need_mathjax -eq 1 ] && { [ -f "$root/.tools/node_modules/mathjax/es5/tex-chtml.js" ] || command -v npm >/dev/null 2>&1; }; then
    missing=("${missing[@]/npm}")
  fi
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sed '/^$/d' | sort -u)
else
  echo "install-deps.sh: not a Debian/Ubuntu system; install by hand: ${pkgs[*]}" >&2
  exit 1
fi

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=sudo
    else
      echo "install-deps.sh: missing packages: ${missing[*]}" >&2
      echo "  install them as root: apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  echo "install-deps.sh: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ $need_mathjax -eq 1 ] && [ ! -f "$root/.tools/node_modules/mathjax/es5/tex-chtml.js" ]; then
  echo "install-deps.sh: installing MathJax 3 into .tools/ (npm)"
  mkdir -p "$root/.tools"
  (cd "$root/.tools" && npm install --no-audit --no-fund --loglevel=error --prefix "$root/.tools" mathjax@3 >/dev/null) || {
    echo "install-deps.sh: could not fetch MathJax from the npm registry; formulas need it for make docs" >&2
    exit 1
  }
fi
exit 0

#!/usr/bin/env bash
# PyTorch 2.x beside Debian 12's 1.13: a Debian 13 (trixie) root with its
# python3-torch (2.6), made once by debootstrap, in which act's Python front
# end runs from this checkout (bound at its own path, with /tmp, so that
# paths in manifests mean the same inside and out). Needs root
# (debootstrap, chroot, mount) and Debian's archive.
#
#   scripts/torch2.sh setup            make the root (idempotent)
#   scripts/torch2.sh run CMD ARGS...  run CMD in it, in the checkout's python/
#
# act's tools and C API come from ACT_BUILD_DIR (default: build/), bound
# in too. Debian's torch 2.6 has no libuv: USE_LIBUV=0 for
# torch.distributed's TCP store. Environment: ACT_TORCH2_ROOT (default:
# build-torch2/root), ACT_TORCH2_SUITE (default: trixie).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
root=${ACT_TORCH2_ROOT:-$here/build-torch2/root}
build_dir=${ACT_BUILD_DIR:-$here/build}
suite=${ACT_TORCH2_SUITE:-trixie}
# What act's Python front end and its tests use (as scripts/setup.sh
# installs for 1.13).
pkgs=(python3-torch python3-torchvision python3-numpy python3-pytest python3-sklearn
      python3-matplotlib python3-tqdm libopenblas0-pthread)

setup() {
  if [ -f "$root/.act-ready" ]; then
    local missing=()
    for p in "${pkgs[@]}"; do
      chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    echo "torch2: installing ${missing[*]} into $root" >&2
    chroot "$root" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends ${missing[*]}" >>"$root.log" 2>&1
    return 0
  fi
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  }
  mkdir -p "$root"
  echo "torch2: debootstrap $suite into $root (a few minutes)" >&2
  debootstrap --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" "$suite" "$root" \
    http://deb.debian.org/debian >"$root.log" 2>&1 || {
    tail -20 "$root.log" >&2
    echo "torch2: debootstrap failed (log: $root.log)" >&2
    exit 1
  }
  touch "$root/.act-ready"
}

# act's binaries and libActCAPI.so, built here, run inside the root too
# (the test oracle and act.compile call them): the root's glibc and
# libstdc++ are newer, so only the libraries it lacks come from here:
# LLVM/MLIR 22 (/usr/lib/llvm-22 bound in) and a few others, linked from
# this system's library directory (bound at /host-lib).
host_libraries() {
  local farm="$root/opt/act-host-libs" bins=()
  rm -rf "$farm" && mkdir -p "$farm" "$root/host-lib" "$root/usr/lib/llvm-22"
  for f in "$build_dir"/bin/act-* "$build_dir"/lib/*.so; do
    [ -x "$f" ] && bins+=("$f")
  done
  ((${#bins[@]})) || return 0
  { ldd "${bins[@]}" 2>/dev/null || true; } | awk '$3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r so path; do
      [ -e "$root/usr/lib/x86_64-linux-gnu/$so" ] && continue
      real=$(realpath "$path")
      case "$real" in
        /usr/lib/x86_64-linux-gnu/*) ln -sf "/host-lib/${real#/usr/lib/x86_64-linux-gnu/}" "$farm/$so" ;;
        *) ln -sf "$real" "$farm/$so" ;;
      esac
    done
}

run() {
  setup
  host_libraries
  mkdir -p "$root$here" "$root$build_dir" "$root/proc" "$root/tmp"
  # A private mount namespace: the binds end with the command.
  exec unshare --mount --propagation private bash -c '
    set -e
    root=$1; here=$2; build_dir=$3; shift 3
    mount --bind "$here" "$root$here"
    case "$build_dir/" in "$here"/*) ;; *) mount --bind "$build_dir" "$root$build_dir" ;; esac
    mount --bind /tmp "$root/tmp"
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mount --bind /usr/lib/x86_64-linux-gnu "$root/host-lib"
    [ -d /usr/lib/llvm-22 ] && mount --bind /usr/lib/llvm-22 "$root/usr/lib/llvm-22"
    mapfile -t pass < <(env | grep -E "^(ACT_|OMP_NUM_THREADS=)" || true)
    exec chroot "$root" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
      PYTHONPATH="$here/python" PYTHONDONTWRITEBYTECODE=1 \
      LD_LIBRARY_PATH=/opt/act-host-libs ACT_BIN_DIR="$build_dir/bin" \
      ACT_LIB_DIR="$build_dir/lib" USE_LIBUV=0 \
      "${pass[@]}" \
      bash -c "cd \"$here/python\" && exec \"\$@\"" bash "$@"
  ' bash "$root" "$here" "$build_dir" "$@"
}

case "${1:-}" in
  setup) setup ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 setup | run CMD ARGS..." >&2; exit 2 ;;
esac

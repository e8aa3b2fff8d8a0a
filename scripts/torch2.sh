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
# Environment: ACT_TORCH2_ROOT (default: build-torch2/root beside build/),
# ACT_TORCH2_SUITE (default: trixie).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
root=${ACT_TORCH2_ROOT:-$here/build-torch2/root}
suite=${ACT_TORCH2_SUITE:-trixie}
pkgs=python3-torch,python3-torchvision,python3-numpy,python3-pytest

setup() {
  [ -f "$root/.act-ready" ] && return 0
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  }
  mkdir -p "$root"
  echo "torch2: debootstrap $suite into $root (a few minutes)" >&2
  debootstrap --variant=minbase --include="$pkgs" "$suite" "$root" \
    http://deb.debian.org/debian >"$root.log" 2>&1 || {
    tail -20 "$root.log" >&2
    echo "torch2: debootstrap failed (log: $root.log)" >&2
    exit 1
  }
  touch "$root/.act-ready"
}

run() {
  setup
  mkdir -p "$root$here" "$root/proc" "$root/tmp"
  # A private mount namespace: the binds end with the command.
  exec unshare --mount --propagation private bash -c '
    set -e
    root=$1; here=$2; shift 2
    mount --bind "$here" "$root$here"
    mount --bind /tmp "$root/tmp"
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mapfile -t pass < <(env | grep -E "^(ACT_|OMP_NUM_THREADS=)" || true)
    exec chroot "$root" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
      PYTHONPATH="$here/python" PYTHONDONTWRITEBYTECODE=1 \
      "${pass[@]}" \
      bash -c "cd \"$here/python\" && exec \"\$@\"" bash "$@"
  ' bash "$root" "$here" "$@"
}

case "${1:-}" in
  setup) setup ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 setup | run CMD ARGS..." >&2; exit 2 ;;
esac

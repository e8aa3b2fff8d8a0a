#!/usr/bin/env bash
# CPU kernel bandwidth: act's lowered encode/decode for every encoding next
# to memcpy, then the PyTorch peer next to torch's copy (same size, one
# thread). Installs and builds what it needs (scripts/setup.sh; Debian's
# python3-torch for the peer).
#   bench/cpu_kernels/run.sh [MIB] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
mib=${1:-256}
runs=${2:-5}
"$here/scripts/setup.sh" > /dev/null
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  apt-get install -y -qq --no-install-recommends python3-torch > /dev/null
fi
"${ACT_BUILD_DIR:-$here/build}/bin/act-bench-kernels" --mib="$mib" --runs="$runs"
echo
/usr/bin/python3 "$here/bench/cpu_kernels/torch_peer.py" --mib "$mib" --runs "$runs"

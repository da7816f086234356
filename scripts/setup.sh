#!/usr/bin/env bash
# Installs the Debian packages strideweave's build and tests need, when they
# are missing. Idempotent: a no-op when everything is present. Reaches no
# network other than Debian's package mirrors (and only when installing).
set -euo pipefail

packages=(g++ cmake ninja-build ccache pkg-config python3 libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev libcli11-dev nlohmann-json3-dev libhwy-dev libdnnl-dev
  # names checked as Python identifiers (Unicode XID properties, src/operation/schema.cpp)
  libicu-dev
  # the Python package (python/, docs/python.md), for Debian's /usr/bin/python3
  python3-dev pybind11-dev libdlpack-dev python3-numpy python3-pytest python3-hypothesis
  # storage: BlockDeviceCarrier's direct I/O, region checksums, the format parsers' fuzz targets
  liburing-dev libxxhash-dev clang-14 libfuzzer-14-dev
  # seeded random tensors: the Philox counter-based generator (header-only)
  librandom123-dev)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libopenblas-dev libeigen3-dev libtorch-dev python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

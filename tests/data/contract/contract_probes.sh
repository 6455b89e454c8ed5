#!/usr/bin/env bash
# Regenerate contract_probes.sass: ptxas's machine code for contract_probes.ptx, one instruction a line
# (address and text; encodings and directives dropped). Needs ptxas (CUDA 13.0) and nvdisasm (CUDA's, or
# `pip install nvidia-cuda-nvdisasm`: NVDISASM=path/to/nvdisasm).
set -euo pipefail
cd "$(dirname "$0")"
NVDISASM=${NVDISASM:-nvdisasm}
tmp=$(mktemp -d)
ptxas -arch=sm_90 -O3 contract_probes.ptx -o "$tmp/p.cubin"
{
    ptxas --version | tail -n 2
    "$NVDISASM" -c "$tmp/p.cubin" | sed -n -e 's/^\.text\.\([A-Za-z0-9_]*\):$/\t\tFunction : \1/p' \
        -e 's|^ *\(/\*[0-9a-f]*\*/\) *\([^;]*;\).*|        \1 \2|p' -e 's/^\(\.L_x_[0-9]*\):/\1:/p'
} > contract_probes.sass
rm -rf "$tmp"

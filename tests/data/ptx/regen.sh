#!/usr/bin/env bash
# Regenerate the committed PTX from src/*.cu with the local nvcc.
# Every source is compiled for sm_90; a few also for sm_80 (suffix _sm80).
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
SRC_DIR=$(pwd)/src
SM80="saxpy wmma_gemm async_misc mma_ldmatrix"
for src in src/*.cu; do
    name=$(basename "$src" .cu)
    "$NVCC" -arch=sm_90 -ptx -lineinfo "$src" -o "$name.ptx"
done
for name in $SM80; do
    "$NVCC" -arch=sm_80 -ptx -lineinfo "src/$name.cu" -o "${name}_sm80.ptx"
done
sed -i "s|\"$SRC_DIR/|\"src/|" ./*.ptx
"$NVCC" --version | tail -n 2 > NVCC_VERSION

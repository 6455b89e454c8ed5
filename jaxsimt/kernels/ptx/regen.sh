#!/usr/bin/env bash
# Regenerate jaxsimt/kernels/ptx/*.ptx from kernels/cuda/*.cu with the local nvcc (run from anywhere):
#   nvcc -arch=sm_90 -O3 -lineinfo -ptx kernels/cuda/NAME.cu   (-lineinfo only adds .loc lines)
set -euo pipefail
cd "$(dirname "$0")/../.."  # the package folder, where nvcc was run: .file names kernels/...
NVCC=${NVCC:-nvcc}
for name in micro_shared micro_global micro_divergence gemm_ladder mma_truth occupancy its real_cuda barriers; do
    "$NVCC" -arch=sm_90 -O3 -lineinfo -ptx "kernels/cuda/$name.cu" -o "kernels/ptx/$name.ptx"
done
sed -i "s|\"$(pwd)/kernels/cuda/|\"kernels/cuda/|" kernels/ptx/*.ptx

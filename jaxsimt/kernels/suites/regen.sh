#!/usr/bin/env bash
# Regenerate jaxsimt/kernels/suites/*.ptx from kernels/suites/*.cu with the local nvcc, and ptxas's report of each
# (kernels/suites/*.ptxas.txt), run from anywhere:
#   nvcc -ptx -arch=sm_90 -O3 -lineinfo SUITE.cu   (-lineinfo only adds .loc lines)
set -euo pipefail
cd "$(dirname "$0")/../.."  # the package folder, where nvcc was run: .file names kernels/...
NVCC=${NVCC:-nvcc}
for name in cuda_samples rodinia polybench parboil shoc; do
    "$NVCC" -arch=sm_90 -O3 -lineinfo -ptx "kernels/suites/$name.cu" -o "kernels/suites/$name.ptx"
done
sed -i "s|\"$(pwd)/kernels/suites/|\"kernels/suites/|" kernels/suites/*.ptx
# ptxas's report of the same PTX (registers per kernel: what the driver's ptxas gives it on the GPU)
PTXAS=${PTXAS:-ptxas}
for name in cuda_samples rodinia polybench parboil shoc; do
    "$PTXAS" -arch=sm_90 -O3 -v "kernels/suites/$name.ptx" -o /dev/null 2> "kernels/suites/$name.ptxas.txt"
done
"$NVCC" --version | tail -n 2 > kernels/suites/NVCC_VERSION

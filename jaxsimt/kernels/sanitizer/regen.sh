#!/usr/bin/env bash
# Regenerate jaxsimt/kernels/sanitizer/*.ptx from kernels/sanitizer/*.cu with the local nvcc, run from anywhere:
#   nvcc -arch=sm_90 -O3 -lineinfo -ptx NAME.cu   (-lineinfo adds the .loc lines that name source lines)
set -euo pipefail
cd "$(dirname "$0")/../.."  # the package folder, where nvcc was run: .file names kernels/...
NVCC=${NVCC:-nvcc}
for name in memcheck racecheck initcheck synccheck clean; do
    "$NVCC" -arch=sm_90 -O3 -lineinfo -ptx "kernels/sanitizer/$name.cu" -o "kernels/sanitizer/$name.ptx"
done
sed -i "s|\"$(pwd)/kernels/sanitizer/|\"kernels/sanitizer/|" kernels/sanitizer/*.ptx
"$NVCC" --version | tail -n 2 > kernels/sanitizer/NVCC_VERSION

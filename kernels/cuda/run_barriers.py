"""The named-barrier kernels of kernels/ptx/barriers.ptx on a GPU (CuPy): prints whether each output equals
numpy. Run alone or under compute-sanitizer (jaxsimt/data/h200/barriers/)."""
import json
import os

import numpy as np
import cupy as cp

ptx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ptx", "barriers.ptx")
mod = cp.RawModule(path=ptx)
out = {}
rounds, blocks = 5, 2
x = (np.arange(blocks * rounds * 64, dtype=np.float32) * 0.25 - 7)
dx, dy = cp.asarray(x), cp.zeros(x.size, cp.float32)
mod.get_function("bar_pipeline")((blocks,), (128,), (dx, dy, np.int32(rounds)))
y = cp.asnumpy(dy)
out["bar_pipeline"] = bool(np.array_equal(y, 2 * x + 1))
xi = ((np.arange(256, dtype=np.int32) * 7919) % 1000 - 500).astype(np.int32)
di, do = cp.asarray(xi), cp.zeros(256, cp.int32)
mod.get_function("bar_subset")((1,), (256,), (di, do))
got = cp.asnumpy(do)
t = np.arange(256)
ref = xi.astype(np.int64).copy()
ref[:64] = 3 * xi[63 - t[:64]] + t[:64]
for i in range(64, 256):
    v = int(xi[i])
    for k in range(i & 7):
        v = (v * 5 + k) & 0xFFFFFFFF
    ref[i] = v
ref = ref.astype(np.uint32).view(np.int32)
out["bar_subset"] = bool(np.array_equal(got, ref))
cp.cuda.runtime.deviceSynchronize()
print(json.dumps(out))

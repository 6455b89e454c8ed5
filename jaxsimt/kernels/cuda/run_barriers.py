"""The named-barrier kernels of jaxsimt/kernels/ptx/barriers.ptx on a GPU (CuPy): prints whether each output equals
numpy. Run alone or under compute-sanitizer (jaxsimt/data/h200/barriers/)."""
import json
import os
import sys

import numpy as np
import cupy as cp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from barrier_refs import pipeline_ref, subset_ref  # noqa: E402 - numpy only, beside jaxsimt/kernels/cuda/

ptx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ptx", "barriers.ptx")
mod = cp.RawModule(path=ptx)
out = {}
rounds, blocks = 5, 2
x = (np.arange(blocks * rounds * 64, dtype=np.float32) * 0.25 - 7)
dx, dy = cp.asarray(x), cp.zeros(x.size, cp.float32)
mod.get_function("bar_pipeline")((blocks,), (128,), (dx, dy, np.int32(rounds)))
y = cp.asnumpy(dy)
out["bar_pipeline"] = bool(np.array_equal(y, pipeline_ref(x)))
xi = ((np.arange(256, dtype=np.int32) * 7919) % 1000 - 500).astype(np.int32)
di, do = cp.asarray(xi), cp.zeros(256, cp.int32)
mod.get_function("bar_subset")((1,), (256,), (di, do))
out["bar_subset"] = bool(np.array_equal(cp.asnumpy(do), subset_ref(xi)))
cp.cuda.runtime.deviceSynchronize()
print(json.dumps(out))

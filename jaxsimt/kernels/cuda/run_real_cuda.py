"""Run the real-CUDA corpus (jaxsimt/kernels/real_cuda.py) on a GPU with CuPy, from the committed PTX
(jaxsimt/kernels/ptx/real_cuda.ptx, compiled to machine code by the driver's ptxas), and save every output:

    python3 jaxsimt/kernels/cuda/run_real_cuda.py --out DIR     -> DIR/real_cuda.npz, DIR/real_cuda_env.json

Needs numpy and cupy only (not jaxsimt). The .npz is the fixture jaxsimt/data/h200/real_cuda.npz.
"""
import argparse
import importlib.util
import json
import os
import platform
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _plan():
    spec = importlib.util.spec_from_file_location("real_cuda_plan", os.path.join(ROOT, "kernels", "real_cuda.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class CupyBackend:
    def __init__(self, ptx_path):
        import cupy as cp
        self.cp = cp
        self.mod = cp.RawModule(path=ptx_path)
        self.launches = []  # kernel names in launch order (ncu's launch ids)

    def array(self, a):
        return self.cp.asarray(np.ascontiguousarray(a))

    def at(self, buf, offset):
        return buf[offset:]  # a pointer `offset` elements into the same allocation

    def launch(self, name, grid, block, args, smem=0):
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        block = tuple(block) if isinstance(block, (tuple, list)) else (block,)
        self.mod.get_function(name)(grid, block, tuple(args), shared_mem=int(smem))
        self.launches.append(name)
        self.cp.cuda.runtime.deviceSynchronize()

    def get(self, buf):
        return self.cp.asnumpy(buf)

    def set_constant(self, symbol, a):
        a = np.ascontiguousarray(a)
        ptr = self.mod.get_global(symbol)
        self.cp.cuda.runtime.memcpy(ptr.ptr, a.ctypes.data, a.nbytes, self.cp.cuda.runtime.memcpyHostToDevice)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    plan = _plan()
    be = CupyBackend(os.path.join(ROOT, "kernels", "ptx", "real_cuda.ptx"))
    out, failed = {}, {}
    for case in plan.CASES:
        try:
            for k, v in plan.run(be, case).items():
                out[f"{case}.{k}"] = np.asarray(v)
            print(case, "ok", flush=True)
        except Exception as e:  # one failing case must not lose the others
            failed[case] = repr(e)
            print(case, "FAILED", repr(e), flush=True)
    np.savez(os.path.join(args.out, "real_cuda.npz"), **out)
    cp = be.cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"device": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
           "cc": f"{props['major']}.{props['minor']}", "driver": cp.cuda.runtime.driverGetVersion(),
           "runtime": cp.cuda.runtime.runtimeGetVersion(), "cupy": cp.__version__, "numpy": np.__version__,
           "python": platform.python_version(), "failed": failed}
    with open(os.path.join(args.out, "real_cuda_env.json"), "w") as f:
        json.dump(env, f, indent=1)
    print(json.dumps(env))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

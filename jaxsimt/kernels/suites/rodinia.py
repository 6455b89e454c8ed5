"""Host drivers for jaxsimt/kernels/suites/rodinia.cu (after Rodinia 3.1's CUDA host code): each case launches its
kernels as Rodinia's host code does, on small inputs by default (its keyword arguments: the size), and
returns (outputs, numpy reference as a function)."""
from __future__ import annotations

import numpy as np

from . import rand, randint, run_case

PTX = "rodinia.ptx"
I32, F32 = np.int32, np.float32


def _graph(n, seed, degree=4):
    """Nodes (first edge, count) and edges of a random graph with a ring (every node reachable)."""
    g = np.random.default_rng(seed)
    adj = [np.concatenate([[(v + 1) % n], g.integers(0, n, g.integers(0, degree))]).astype(I32) for v in range(n)]
    counts = np.array([a.size for a in adj], I32)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(I32)
    return np.stack([start, counts], axis=1).reshape(-1), np.concatenate(adj)


def _graph_bulk(n, seed, degree=4):
    """The kind of graph `_graph` makes (each node's first edge to the next on the ring, then 0 to degree-1
    random ones) drawn a whole array at a time: for large graphs, which `_graph`'s node-by-node draws
    (kept for the default graph of the committed fixtures) would take seconds to make."""
    g = np.random.default_rng(seed)
    counts = (1 + g.integers(0, degree, n)).astype(I32)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(I32)
    edges = g.integers(0, n, int(counts.sum())).astype(I32)
    edges[start] = (np.arange(n) + 1) % n
    return np.stack([start, counts], axis=1).reshape(-1), edges


def _bfs_levels(nodes, edges, n):
    """Breadth-first level of every node from node 0 (-1: unreached), one frontier at a time."""
    s, c = nodes[0::2], nodes[1::2]
    level = np.full(n, -1, I32)
    level[0], frontier, depth = 0, np.array([0]), 0
    while frontier.size:
        cnt = c[frontier]
        # the edge indices of the frontier's nodes: start..start+count-1 of each, concatenated
        first = np.repeat(s[frontier] - (np.cumsum(cnt) - cnt), cnt)
        nbrs = edges[first + np.arange(cnt.sum())]
        frontier = np.unique(nbrs[level[nbrs] < 0])
        depth += 1
        level[frontier] = depth
    return level


def bfs(be, n=1000, bulk_graph=False):
    """Rodinia bfs: Kernel then Kernel2 per level until no node is updated (graph of n nodes, 512 threads
    per block as Rodinia's MAX_THREADS_PER_BLOCK; bulk_graph: drawn by `_graph_bulk`)."""
    nodes, edges = (_graph_bulk if bulk_graph else _graph)(n, 21)
    mask, visited = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
    mask[0] = visited[0] = True
    cost = np.full(n, -1, I32)
    cost[0] = 0
    b_nodes, b_edges, b_mask = be.array(nodes), be.array(edges), be.array(mask)
    b_upd, b_vis, b_cost = be.array(np.zeros(n, np.bool_)), be.array(visited), be.array(cost)
    threads = 512
    blocks = (n + threads - 1) // threads
    k = 0
    while True:
        b_over = be.array(np.zeros(1, np.bool_))
        be.launch("bfs_Kernel", blocks, threads, [b_nodes, b_edges, b_mask, b_upd, b_vis, b_cost, I32(n)])
        be.launch("bfs_Kernel2", blocks, threads, [b_mask, b_upd, b_vis, b_over, I32(n)])
        k += 1
        if not be.get(b_over)[0]:
            break

    def reference():
        ref = _bfs_levels(nodes, edges, n)
        return {"cost": ref, "levels": np.array([ref.max() + 1], I32)}
    return {"cost": be.get(b_cost), "levels": np.array([k], I32)}, reference


_BLOSUM_SEED = 22


def _nw_scores(matrix, reference, penalty):
    """The Needleman-Wunsch score matrix from its first row and column (`matrix`), one anti-diagonal at a
    time (each cell from its north-west, west and north neighbours)."""
    want = matrix.copy()
    rows, cols = want.shape
    for d in range(2, rows + cols - 1):
        i = np.arange(max(1, d - cols + 1), min(rows - 1, d - 1) + 1)
        j = d - i
        want[i, j] = np.maximum(np.maximum(want[i - 1, j - 1] + reference[i, j], want[i, j - 1] - penalty),
                                want[i - 1, j] - penalty)
    return want


def nw(be, n=64):
    """Rodinia nw: an (n+1) x (n+1) score matrix (n x n sequences, n a multiple of 16, penalty 10) by block
    anti-diagonals, needle_cuda_shared_1 for i = 1..n/16 and needle_cuda_shared_2 for i = n/16-1..1 (7
    launches of 16 threads at n = 64)."""
    penalty = 10
    cols = rows = n + 1
    g = np.random.default_rng(_BLOSUM_SEED)
    blosum = g.integers(-4, 12, (24, 24))
    s1, s2 = g.integers(1, 10, rows), g.integers(1, 10, cols)
    reference = np.zeros((rows, cols), I32)
    reference[1:, 1:] = blosum[s1[1:, None], s2[None, 1:]]
    matrix = np.zeros((rows, cols), I32)
    matrix[:, 0] = -penalty * np.arange(rows)
    matrix[0, :] = -penalty * np.arange(cols)
    b_ref, b_mat = be.array(reference.reshape(-1)), be.array(matrix.reshape(-1))
    bw = n // 16
    for i in range(1, bw + 1):
        be.launch("needle_cuda_shared_1", i, 16, [b_ref, b_mat, I32(cols), I32(penalty), I32(i), I32(bw)])
    for i in range(bw - 1, 0, -1):
        be.launch("needle_cuda_shared_2", i, 16, [b_ref, b_mat, I32(cols), I32(penalty), I32(i), I32(bw)])
    return {"matrix": be.get(b_mat)}, lambda: {"matrix": _nw_scores(matrix, reference, penalty).reshape(-1)}


def pathfinder(be, cols=1000, rows=20, pyramid=4):
    """Rodinia pathfinder: `pyramid` rows per launch of blocks of 256 columns (5 launches of 5 blocks at
    1000 columns, 20 rows, pyramid height 4)."""
    wall = randint(23, (rows, cols), 0, 10)
    border = pyramid
    small = 256 - pyramid * 2
    blocks = cols // small + (cols % small != 0)
    b_wall = be.array(wall.reshape(-1))
    res = [be.array(wall[0].copy()), be.array(np.zeros(cols, I32))]
    src = 0
    for t in range(0, rows - 1, pyramid):
        be.launch("dynproc_kernel", blocks, 256, [I32(min(pyramid, rows - t - 1)), be.at(b_wall, cols), res[src],
                                                  res[1 - src], I32(cols), I32(rows), I32(t), I32(border)])
        src = 1 - src

    def reference():
        dist = wall[0].astype(np.int64)
        for r in range(1, rows):
            left = np.concatenate([[dist[0]], dist[:-1]])
            right = np.concatenate([dist[1:], [dist[-1]]])
            dist = np.minimum(np.minimum(left, dist), right) + wall[r]
        return {"result": dist.astype(I32)}
    return {"result": be.get(res[src])}, reference


def _hotspot_params(rows, cols):
    t_chip, chip_h, chip_w = 0.0005, 0.016, 0.016
    spec_heat, k_si, factor, max_pd, precision = 1.75e6, 100.0, 0.5, 3.0e6, 0.001
    gh, gw = chip_h / rows, chip_w / cols
    cap = factor * spec_heat * t_chip * gw * gh
    rx = gw / (2.0 * k_si * t_chip * gh)
    ry = gh / (2.0 * k_si * t_chip * gw)
    rz = t_chip / (k_si * gh * gw)
    step = precision / (max_pd / (factor * t_chip * spec_heat))
    return cap, rx, ry, rz, step


def hotspot(be, n=64, total=6, pyramid=2):
    """Rodinia hotspot: n x n grid, `total` time steps, `pyramid` of them per launch of 16 x 16 blocks (3
    launches of 6 x 6 blocks at 64, 6, 2)."""
    temp = rand(24, (n, n), 323, 343)
    power = rand(25, (n, n), 0, 0.5)
    cap, rx, ry, rz, step = _hotspot_params(n, n)
    border = pyramid
    small = 16 - pyramid * 2
    blocks = n // small + (n % small != 0)
    b_pow = be.array(power.reshape(-1))
    bufs = [be.array(temp.reshape(-1)), be.array(np.zeros(n * n, F32))]
    src = 0
    for t in range(0, total, pyramid):
        be.launch("calculate_temp", (blocks, blocks), (16, 16),
                  [I32(min(pyramid, total - t)), b_pow, bufs[src], bufs[1 - src], I32(n), I32(n), I32(border),
                   I32(border), F32(cap), F32(rx), F32(ry), F32(rz), F32(step), F32(0.001)])
        src = 1 - src

    def reference():
        T = temp.astype(np.float64)
        P = power.astype(np.float64)
        for _ in range(total):
            p = np.pad(T, 1, mode="edge")
            T = T + step / cap * (P + (p[2:, 1:-1] + p[:-2, 1:-1] - 2 * T) / ry
                                  + (p[1:-1, 2:] + p[1:-1, :-2] - 2 * T) / rx + (80.0 - T) / rz)
        return {"temp": T.astype(F32).reshape(-1)}
    return {"temp": be.get(bufs[src])}, reference


def hotspot3d(be, nx=64, nz=8, iters=3):
    """Rodinia hotspot3D (hotspotOpt1): nx x nx x nz grid (nx a multiple of 64), `iters` iterations (one
    launch each), blocks of 64 x 4."""
    ny = nx
    t = rand(26, nz * ny * nx, 323, 343)
    p = rand(27, nz * ny * nx, 0, 0.5)
    dt, cap, rx, ry, rz = 0.001, 0.5 * 1.75e6 * 0.0005 * (0.016 / nx) * (0.016 / ny), 1.0, 1.0, 1.0
    stepdiv = dt / cap
    ce = cw = np.float32(stepdiv / rx)
    cn = cs = np.float32(stepdiv / ry)
    ct = cb = np.float32(stepdiv / rz)
    cc = np.float32(1.0 - (2.0 * ce + 2.0 * cn + 3.0 * ct))
    b_p, bufs = be.array(p), [be.array(t), be.array(np.zeros_like(t))]
    for i in range(iters):
        be.launch("hotspotOpt1", (nx // 64, ny // 4), (64, 4),
                  [b_p, bufs[i % 2], bufs[1 - i % 2], F32(stepdiv), I32(nx), I32(ny), I32(nz), ce, cw, cn, cs, ct, cb,
                   cc])

    def reference():
        T = t.reshape(nz, ny, nx).astype(np.float64)
        P = p.reshape(nz, ny, nx).astype(np.float64)
        for _ in range(iters):
            q = np.pad(T, 1, mode="edge")
            T = (cc * T + cw * q[1:-1, 1:-1, :-2] + ce * q[1:-1, 1:-1, 2:] + cs * q[1:-1, 2:, 1:-1]
                 + cn * q[1:-1, :-2, 1:-1] + cb * q[:-2, 1:-1, 1:-1] + ct * q[2:, 1:-1, 1:-1] + stepdiv * P + ct * 80.0)
        return {"temp": T.astype(F32).reshape(-1)}
    return {"temp": be.get(bufs[iters % 2])}, reference


def _srad_ref(J, niter, lam, r1, r2, c1, c2):
    J = J.astype(np.float64)
    for _ in range(niter):
        roi = J[r1:r2 + 1, c1:c2 + 1]
        mean = roi.mean()
        q0 = (np.mean(roi * roi) - mean * mean) / (mean * mean)
        p = np.pad(J, 1, mode="edge")
        n, s, w, e = p[:-2, 1:-1] - J, p[2:, 1:-1] - J, p[1:-1, :-2] - J, p[1:-1, 2:] - J
        g2 = (n * n + s * s + w * w + e * e) / (J * J)
        lap = (n + s + w + e) / J
        num = 0.5 * g2 - (1 / 16) * lap * lap
        den = 1 + 0.25 * lap
        q = num / (den * den)
        c = np.clip(1 / (1 + (q - q0) / (q0 * (1 + q0))), 0, 1)
        cp = np.pad(c, 1, mode="edge")
        J = J + 0.25 * lam * (c * n + cp[2:, 1:-1] * s + c * w + cp[1:-1, 2:] * e)
    return J


def srad(be, kernel1="srad_cuda_1", n=64, niter=2, roi_side=32):
    """Rodinia srad_v2: n x n image (n a multiple of 16), `niter` iterations of srad_cuda_1 then srad_cuda_2
    (blocks of 16 x 16), the statistics of the roi_side x roi_side region of interest at the top left on the
    host between them as Rodinia's host does (float sums)."""
    lam = 0.5
    r1, r2, c1, c2 = 0, roi_side - 1, 0, roi_side - 1
    J = np.exp(rand(28, (n, n), 0, 1)).astype(F32)
    bufs = [be.array(np.zeros(n * n, F32)) for _ in range(5)]
    b_e, b_w, b_n, b_s, b_c = bufs
    size_r = (r2 - r1 + 1) * (c2 - c1 + 1)
    host = J.reshape(-1).copy()
    for _ in range(niter):
        roi = host.reshape(n, n)[r1:r2 + 1, c1:c2 + 1].reshape(-1)
        s, s2 = np.float32(0), np.float32(0)
        for v in roi:  # the host's float accumulation, in order
            s = np.float32(s + v)
            s2 = np.float32(s2 + v * v)
        mean = np.float32(s / np.float32(size_r))
        var = np.float32(np.float32(s2 / np.float32(size_r)) - mean * mean)
        q0sqr = np.float32(var / (mean * mean))
        b_j = be.array(host)
        be.launch(kernel1, (n // 16, n // 16), (16, 16), [b_e, b_w, b_n, b_s, b_j, b_c, I32(n), I32(n), q0sqr])
        be.launch("srad_cuda_2", (n // 16, n // 16), (16, 16),
                  [b_e, b_w, b_n, b_s, b_j, b_c, I32(n), I32(n), F32(lam), q0sqr])
        host = be.get(b_j)
    return {"J": host}, lambda: {"J": _srad_ref(J, niter, lam, r1, r2, c1, c2).astype(F32).reshape(-1)}


def lud(be, n=64):
    """Rodinia lud: n x n diagonally dominant matrix (n a multiple of 16), blocks of 16: n/16 - 1 steps of
    diagonal, perimeter, internal (shrinking grids) and a last diagonal (10 launches at 64)."""
    bs = 16
    a = rand(29, (n, n)) + np.eye(n, dtype=F32) * n
    b_m = be.array(a.reshape(-1))
    i = 0
    while i < n - bs:
        be.launch("lud_diagonal", 1, bs, [b_m, I32(n), I32(i)])
        be.launch("lud_perimeter", (n - i) // bs - 1, bs * 2, [b_m, I32(n), I32(i)])
        g = (n - i) // bs - 1
        be.launch("lud_internal", (g, g), (bs, bs), [b_m, I32(n), I32(i)])
        i += bs
    be.launch("lud_diagonal", 1, bs, [b_m, I32(n), I32(i)])

    def reference():
        lu = a.astype(np.float64).copy()
        for k in range(n):
            lu[k + 1:, k] /= lu[k, k]
            lu[k + 1:, k + 1:] -= np.outer(lu[k + 1:, k], lu[k, k + 1:])
        return {"lu": lu.astype(F32).reshape(-1)}
    return {"lu": be.get(b_m)}, reference


def gaussian(be, n=16):
    """Rodinia gaussian: n x n system, Fan1 (blocks of 512) and Fan2 (blocks of 4 x 4) for each of the n - 1
    columns (30 launches at 16)."""
    a = rand(30, (n, n)) + np.eye(n, dtype=F32) * n
    b = rand(31, n)
    b_m, b_a, b_b = be.array(np.zeros(n * n, F32)), be.array(a.reshape(-1)), be.array(b)
    g2 = n // 4 + (n % 4 != 0)
    for t in range(n - 1):
        be.launch("Fan1", n // 512 + 1, 512, [b_m, b_a, I32(n), I32(t)])
        be.launch("Fan2", (g2, g2), (4, 4), [b_m, b_a, b_b, I32(n), I32(n - t), I32(t)])
    got_a = be.get(b_a).reshape(n, n)

    def reference():
        A, B = a.astype(np.float64).copy(), b.astype(np.float64).copy()
        for t in range(n - 1):
            m = A[t + 1:, t] / A[t, t]
            A[t + 1:, t:] -= np.outer(m, A[t, t:])
            B[t + 1:] -= m * B[t]
        return {"a_upper": np.triu(A).astype(F32).reshape(-1), "b": B.astype(F32)}
    # below the diagonal Fan2 leaves a - m a (rounding residue), as Rodinia; compare the upper triangle
    return {"a_upper": np.triu(got_a).reshape(-1), "b": be.get(b_b)}, reference


def backprop(be, inp=64):
    """Rodinia backprop: `inp` inputs (a multiple of 16), 16 hidden units: layerforward (one block of 16 x 16
    per 16 inputs) and adjust_weights."""
    hid = 16
    blocks = inp // 16
    x = rand(32, inp + 1, 0, 1)
    w = rand(33, (inp + 1) * (hid + 1))
    delta, oldw = rand(34, hid + 1), rand(35, (inp + 1) * (hid + 1), -0.1, 0.1)
    b_x, b_w = be.array(x), be.array(w.copy())
    b_out, b_part = be.array(np.zeros(hid + 1, F32)), be.array(np.zeros(blocks * hid, F32))
    be.launch("bpnn_layerforward_CUDA", (1, blocks), (16, 16), [b_x, b_out, b_w, b_part, I32(inp), I32(hid)])
    partial = be.get(b_part)
    b_d, b_w2, b_old = be.array(delta), be.array(w.copy()), be.array(oldw.copy())
    be.launch("bpnn_adjust_weights_cuda", (1, blocks), (16, 16), [b_d, I32(hid), b_x, I32(inp), b_w2, b_old])

    def reference():
        W = w.reshape(inp + 1, hid + 1).astype(np.float64)
        part = (W[1:, 1:] * x[1:, None]).reshape(blocks, 16, hid).sum(axis=1).reshape(-1)
        W2 = w.reshape(inp + 1, hid + 1).astype(np.float64).copy()
        O = oldw.reshape(inp + 1, hid + 1).astype(np.float64).copy()
        upd = 0.3 * delta[None, 1:] * x[1:, None] + 0.3 * O[1:, 1:]
        W2[1:, 1:] += upd
        O[1:, 1:] = upd
        upd0 = 0.3 * delta[1:] + 0.3 * O[0, 1:]
        W2[0, 1:] += upd0
        O[0, 1:] = upd0
        return {"partial": part.astype(F32), "w": W2.astype(F32).reshape(-1), "oldw": O.astype(F32).reshape(-1)}
    return {"partial": partial, "w": be.get(b_w2), "oldw": be.get(b_old)}, reference


def kmeans(be, npts=1000):
    """Rodinia kmeans (one assignment pass): invert_mapping, then kmeansPoint with the 5 cluster centres in
    __constant__ c_clusters; npts points of 8 features, blocks of 256."""
    nf, nc = 8, 5
    feats = rand(36, (npts, nf))
    clusters = feats[np.random.default_rng(37).choice(npts, nc, replace=False)]
    b_in, b_t = be.array(feats.reshape(-1)), be.array(np.zeros(npts * nf, F32))
    blocks = (npts + 255) // 256
    be.launch("invert_mapping", blocks, 256, [b_in, b_t, I32(npts), I32(nf)])
    be.set_constant("c_clusters", clusters.reshape(-1))
    b_mem = be.array(np.zeros(npts, I32))
    be.launch("kmeansPoint", blocks, 256, [b_t, I32(nf), I32(npts), I32(nc), b_mem])

    def reference():
        # squared distances to one centre at a time (a points x centres x features array would be GiB)
        d = np.stack([((feats.astype(np.float64) - c) ** 2).sum(axis=1) for c in clusters], axis=1)
        return {"transposed": feats.T.reshape(-1).copy(), "membership": d.argmin(axis=1).astype(I32)}
    return {"transposed": be.get(b_t), "membership": be.get(b_mem)}, reference


def nn(be, n=2000):
    """Rodinia nn: distances of n records to a query point, blocks of 256."""
    loc = np.stack([rand(38, n, 0, 90), rand(39, n, 0, 180)], axis=1)
    lat, lng = F32(30.0), F32(90.0)
    b_loc, b_d = be.array(loc.reshape(-1)), be.array(np.zeros(n, F32))
    be.launch("euclid", (n + 255) // 256, 256, [b_loc, b_d, I32(n), lat, lng])

    def reference():
        ref = np.sqrt((lat - loc[:, 0].astype(np.float64)) ** 2 + (lng - loc[:, 1].astype(np.float64)) ** 2)
        return {"dist": ref.astype(F32)}
    return {"dist": be.get(b_d)}, reference


CASE_FUNCS = {
    "bfs": bfs,
    "nw": nw,
    "pathfinder": pathfinder,
    "hotspot": hotspot,
    "hotspot3D": hotspot3d,
    "srad_v2": srad,
    "lud": lud,
    "gaussian": gaussian,
    "backprop": backprop,
    "kmeans": kmeans,
    "nn": nn,
}
# srad_v2 with Rodinia's own loads of srad_cuda_1, which read outside J (a row above it for the top blocks):
# jaxsimt refuses it with an out-of-bounds error; on the GPU compute-sanitizer reports the same reads
SANITIZER_CASES = {"srad_v2_rodinia_loads": lambda be, **size: srad(be, "srad_cuda_1_rodinia", **size)}
CASES = tuple(CASE_FUNCS)
CASE_FUNCS.update(SANITIZER_CASES)
TOLERANCE = {"hotspot": 1e-5, "hotspot3D": 1e-5, "srad_v2": 1e-4, "lud": 1e-4, "gaussian": 1e-4, "backprop": 1e-5,
             "nn": 1e-6}


# Timing sizes (jaxsimt/kernels/suites/__init__.py): Rodinia's own inputs where they run long enough on an H200,
# with fewer iterations where Rodinia's would make hundreds of launches of the same kernel.
TIMING = {
    "bfs": {"n": 1 << 20, "bulk_graph": True},  # Rodinia's graph1MW: a million nodes
    "nw": {"n": 2048},  # Rodinia's 2048 x 2048: 255 launches of up to 128 blocks of 16 threads
    "pathfinder": {"cols": 100_000, "rows": 200, "pyramid": 20},  # Rodinia's columns and pyramid, 10 launches
    "hotspot": {"n": 1024, "total": 20, "pyramid": 2},  # Rodinia's 1024 grid, 10 launches
    "hotspot3D": {"nx": 512, "nz": 8, "iters": 20},  # Rodinia's 512 x 512 x 8 (20 of its 100 iterations)
    "srad_v2": {"n": 2048, "niter": 2, "roi_side": 128},  # Rodinia's 2048 x 2048, region 0..127
    "lud": {"n": 1024},  # 190 launches
    "gaussian": {"n": 512},  # 1022 launches
    "backprop": {"inp": 1 << 19},  # 32768 blocks (gridDim.y at most 65535)
    "kmeans": {"npts": 1 << 21},
    "nn": {"n": 1 << 25},  # 256 MiB of records read, 128 MiB of distances written
}
TIMING_NO_REFERENCE = frozenset()


def run(be, case, size=None, reference=True):
    """(outputs, reference) of `case` on backend `be` at `size` (None: the default size)."""
    return run_case(CASE_FUNCS, be, case, size, reference)

"""Batched launches and sweeps: many launches of a kernel as one run of the machine.

`launch_batch` runs one kernel with one launch shape over a batch of inputs (a leading batch axis on
the arguments, as `jax.vmap`'s `in_axes` says). The items are not vmapped over the machine's loop (a
batched `lax.switch` would run every basic block and a batched `while_loop` would run until its slowest
item): they are folded into the block axis — item i's blocks get the ids i * n_blocks + block, its arrays
lie after item i-1's in global memory, each warp reads its own item's bases, sizes and scalars — and the
counters are summed per item as they are counted. One compiled machine, one loop over waves.

`sweep` runs launches that differ in shape (block sizes, tile sizes, kernels, architectures): it groups
them by what must be equal inside one batch (kernel, grid, block, architecture, options), runs each group
as one batched launch, and returns the results in the input order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from jaxsimt import errors
from jaxsimt.run import validate_args
from jaxsimt.arch import Arch, get_arch
from jaxsimt.run.launch import LaunchResult, _dim3, _program_of, _split_args, run_items
from jaxsimt.run.options import LaunchOptions


@dataclass
class BatchResult:
    """Per-item results of a batched launch.

    items: one LaunchResult per item, exactly what `jaxsimt.launch` returns for that item alone;
    outputs: parameter name -> the items' final arrays stacked on a leading batch axis [B, ...];
    stats: metric name -> [B] array of the items' values.
    """

    items: list[LaunchResult]
    outputs: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    stats: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[LaunchResult]:
        return iter(self.items)

    def __getitem__(self, key: Union[int, str]):
        """An item's LaunchResult (int) or a parameter's stacked final arrays (str)."""
        return self.outputs[key] if isinstance(key, str) else self.items[key]


def _unbatch(prog, args: Sequence[Any], in_axes) -> list[tuple]:
    """Split batched arguments into per-item argument tuples (in_axes: 0 or None per argument; args and
    in_axes in parameter order or dicts by parameter name)."""
    names = [p.name for p in prog.params]
    args = validate_args.bind(prog.name, names, args)
    if isinstance(in_axes, dict):
        in_axes = validate_args.bind(prog.name, names, in_axes)
    axes = ([in_axes] * len(args) if isinstance(in_axes, (int, type(None))) and in_axes in (0, None)
            else list(in_axes) if isinstance(in_axes, (tuple, list)) else None)
    if axes is None or len(axes) != len(args) or any(a not in (0, None) or isinstance(a, bool) for a in axes):
        raise errors.ArgumentError(f"kernel {prog.name}: in_axes must be 0, None, or one of them per argument "
                                   f"({', '.join(names)}); got {in_axes!r}")
    sizes = {}
    for p, a, ax in zip(prog.params, args, axes):
        if ax == 0:
            n = np.shape(a)[0] if np.ndim(a) > 0 else None
            if n is None:
                raise errors.ArgumentError(f"kernel {prog.name}: parameter {p.name!r} (position {p.index}) has "
                                           f"in_axes 0 but its argument {validate_args._desc(a)} has no leading "
                                           f"batch axis")
            sizes[p.name] = n
    if not sizes:
        raise errors.ArgumentError(f"kernel {prog.name}: no argument has a batch axis (in_axes all None)")
    if len(set(sizes.values())) != 1:
        raise errors.ArgumentError(f"kernel {prog.name}: batch axes differ in length: {sizes}")
    B = next(iter(sizes.values()))
    if B < 1:
        raise errors.ArgumentError(f"kernel {prog.name}: empty batch (batch axes of length 0: {sizes})")
    return [tuple(a[i] if ax == 0 else a for a, ax in zip(args, axes)) for i in range(B)]


def _stack(items: list[LaunchResult], whole: dict) -> tuple[dict, dict]:
    """Outputs [B, ...] (`whole`: those already stacked) and stats [B] of the items."""
    outputs = {k: (whole[k] if k in whole else None if v is None else np.stack([it.outputs[k] for it in items]))
               for k, v in items[0].outputs.items()}
    stats = {k: np.asarray([it.stats[k] for it in items]) for k in items[0].stats}
    return outputs, stats


def launch_batch(kernel, grid, block, args: Sequence[Any], arch: Union[str, Arch] = "h200", *,
                 in_axes=0, progress: Optional[bool] = None, options: Optional[LaunchOptions] = None,
                 **kw) -> BatchResult:
    """Launch `kernel` once per item of a batch, as one compiled run: item i's arguments are
    `args[k][i]` for the arguments batched on axis 0 and `args[k]` for those with `in_axes` None
    (shared inputs: each item still gets its own copy to write). Same grid, block, architecture and
    options for every item; the options are `jaxsimt.launch`'s (`options=` and keywords; trace and timing
    excepted). Item i's results and counters equal `jaxsimt.launch` of item i alone; `emulator__steps` is the
    batch's step count. progress: a bar of the waves on stderr (`jaxsimt.run.progress`): None where stderr is a
    terminal and not under pytest, True where it is a terminal, False never."""
    from jaxsimt.run.progress import launch_progress

    prog = _program_of(kernel)
    per_item = _unbatch(prog, args, in_axes)
    whole: dict = {}
    with launch_progress(progress, f"{prog.name} x{len(per_item)}") as bar:
        items = run_items(prog, grid, block, [_split_args(prog, a) for a in per_item], per_item, arch,
                          LaunchOptions.of(options, **kw).replace(progress=bar), stacked=whole)
    outputs, stats = _stack(items, whole)
    return BatchResult(items, outputs, stats)


@dataclass
class LaunchSpec:
    """One launch of a sweep: `jaxsimt.launch(kernel, grid, block, args, arch, **options)` (args in
    parameter order or a dict by parameter name; `options` a dict of `LaunchOptions` fields, or one)."""

    kernel: Any
    grid: Any
    block: Any
    args: Sequence[Any] = ()
    arch: Union[str, Arch] = "h200"
    options: Any = field(default_factory=dict)

    def launch_options(self) -> LaunchOptions:
        return self.options if isinstance(self.options, LaunchOptions) else LaunchOptions.of(**self.options)

    def group_key(self) -> tuple:
        """What launches must share to run as one batch (everything but the arguments and `ctas`)."""
        prog = _program_of(self.kernel)
        opts = self.launch_options().key(without=("ctas",))
        return (id(prog), _dim3(self.grid, "grid", prog.name), _dim3(self.block, "block", prog.name),
                get_arch(self.arch).name, opts)


def sweep(specs: Sequence[LaunchSpec], *, progress: Optional[bool] = None, max_items: int = 1024,
          description: str = "sweep") -> list[LaunchResult]:
    """Run launches of any shapes; each group of launches sharing kernel, grid, block, architecture
    and options runs as batched launches (at most `max_items` items each). Returns the LaunchResults
    in the order of `specs`. `progress`: a rich progress bar of the launches done on stderr (None: where
    stderr is a terminal and not under pytest; True: where it is a terminal; False: never)."""
    specs = list(specs)
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(specs):
        if not isinstance(s, LaunchSpec):
            raise TypeError(f"sweep expects LaunchSpec items, got {type(s).__name__} at position {i}")
        groups.setdefault(s.group_key(), []).append(i)
        # every launch checked before the first group runs: a mistake in the last costs no run
        prog = _program_of(s.kernel)
        validate_args.check_args(prog, s.args)
        o = s.launch_options()
        validate_args.check_options(prog, o.stack_depth, o.blocks_per_wave)
    results: list[Optional[LaunchResult]] = [None] * len(specs)

    def run_group(idx: list[int]):
        s0 = specs[idx[0]]
        prog = _program_of(s0.kernel)
        names = [p.name for p in prog.params]
        per_item = [validate_args.bind(prog.name, names, specs[i].args) for i in idx]
        out = run_items(prog, s0.grid, s0.block, [_split_args(prog, a) for a in per_item], per_item, s0.arch,
                        s0.launch_options().replace(ctas=None),
                        item_ctas=[specs[i].launch_options().ctas for i in idx])
        for i, r in zip(idx, out):
            results[i] = r

    chunks = [idx[k:k + max_items] for idx in groups.values() for k in range(0, len(idx), max_items)]
    from jaxsimt.run.progress import task_progress

    with task_progress(len(specs), progress, description) as bar:
        for idx in chunks:
            s0 = specs[idx[0]]
            if bar is not None:
                bar.describe(f"{description}: {_program_of(s0.kernel).name} block={_dim3(s0.block, 'block')} "
                             f"x{len(idx)}")
            run_group(idx)
            if bar is not None:
                bar.advance(len(idx))
    return results

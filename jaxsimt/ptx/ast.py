"""PTX abstract syntax tree: frozen dataclasses for a parsed module.

Everything is a tuple or a scalar, so every node is hashable and safe to share. Names are as written in the
source, except names declared inside a nested `{ }` scope, which are renamed `name$sK` (see `parser.py`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

# --------------------------------------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    """A register: `%r1`, `%fd3`, `%SP`, or a declared plain name such as `temp_param_reg`."""
    name: str


@dataclass(frozen=True)
class SpecialReg:
    """A special (read-only) register: `%tid.x` is SpecialReg("%tid", "x"); `%laneid` has component None."""
    name: str
    component: Optional[str] = None


@dataclass(frozen=True)
class Imm:
    """An immediate. Integers: `value` is a Python int (sign applied). Floats: `value` is the Python float the
    literal denotes, exactly; for the hex forms `0fXXXXXXXX` (f32) and `0dXXXXXXXXXXXXXXXX` (f64) `bits` holds
    the bit pattern and `width` 32 or 64 (NaN payloads survive only in `bits`). Decimal float literals are f64
    in PTX (width 64, bits of the double)."""
    value: Union[int, float]
    is_float: bool
    raw: str
    bits: Optional[int] = None
    width: Optional[int] = None


@dataclass(frozen=True)
class Sym:
    """A name that is not a register: a label, a parameter, a variable or a function."""
    name: str


@dataclass(frozen=True)
class Vec:
    """A brace vector operand: `{%f1, %f2, %f3, %f4}`. Elements are Reg, Imm or Sink."""
    elems: tuple


@dataclass(frozen=True)
class Addr:
    """A memory operand `[base+offset]`: `[%rd4+16]`, `[%rd4+-16]`, `[name]`, `[name+8]`, `[64]` (base None)."""
    base: Optional[Union[Reg, Sym]]
    offset: int = 0


@dataclass(frozen=True)
class Bracket:
    """A bracketed list with more than one item (texture/surface forms: `[%rd1, {%f1, %f2}]`)."""
    items: tuple


@dataclass(frozen=True)
class RegPair:
    """Two predicate destinations `%p1|%p2` (setp/set with both the result and its complement)."""
    first: Reg
    second: Reg


@dataclass(frozen=True)
class NotPred:
    """A negated predicate source operand `!%p3` (setp.and/.or combining operand, selp-like uses)."""
    reg: Reg


@dataclass(frozen=True)
class Sink:
    """The sink `_`: a destination whose value is discarded."""


@dataclass(frozen=True)
class ParamList:
    """The parenthesised return or argument list of `call`: `(retval0)`, `(param0, param1)`."""
    items: tuple


Operand = Union[Reg, SpecialReg, Imm, Sym, Vec, Addr, Bracket, RegPair, NotPred, Sink, ParamList]


@dataclass(frozen=True)
class SymAddr:
    """An address in a variable initializer: `sym`, `sym+8`, `generic(sym)` (generic=True)."""
    name: str
    offset: int = 0
    generic: bool = False


# --------------------------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Predicate:
    """An instruction guard: `@%p1` is Predicate("%p1", False); `@!%p1` is Predicate("%p1", True)."""
    reg: str
    negated: bool = False


@dataclass(frozen=True)
class Label:
    name: str
    line: int


@dataclass(frozen=True)
class Instruction:
    """One instruction.

    opcode     the instruction name; one word (`ld`, `add`, `shfl`, `mma`) except the compound names listed in
               `opcodes.COMPOUND_OPCODES` (`wmma.load`, `cp.async.wait_group`, `bar.warp.sync`, ...).
    modifiers  every dot-separated part after the opcode, in source order (`::` kept: `shared::cta`).
    types      the modifiers that are PTX types, in order: ("f32",), ("s64", "s32") for cvt.s64.s32.
    space      state space of a memory instruction (param/global/shared/local/const/tex or "generic" when
               none is written); None for instructions that do not address memory. `shared::cta` -> "shared".
    vector     1, 2, 4 or 8 (from .v2/.v4/.v8).
    pred       the guard, or None.
    operands   destination(s) first, as written. For `call`: (ParamList(returns), target, ParamList(args)) and
               a fourth Sym for a prototype when one is given; returns/args may be empty ParamLists.
    line       1-based line of the opcode in the source.
    text       the source text of the instruction (whitespace collapsed, up to and excluding `;`).
    loc        (file_index, line, column) of the last `.loc` before it in the function, or None.
    inlined_at (file_index, line, column) from that `.loc`'s `inlined_at` clause, or None.
    known      False when the opcode is not a PTX ISA instruction known to this parser (parsed generically).
    pragmas    the `.pragma` strings of the function body just before it (`.pragma "nounroll";` opens the
               header block of a loop ptxas must not unroll), in order.
    """
    opcode: str
    modifiers: tuple
    types: tuple
    space: Optional[str]
    vector: int
    pred: Optional[Predicate]
    operands: tuple
    line: int
    text: str
    loc: Optional[tuple] = None
    inlined_at: Optional[tuple] = None
    known: bool = True
    pragmas: tuple = ()

    @property
    def name(self) -> str:
        """The full dotted instruction name, e.g. `ld.global.nc.v4.f32`."""
        return ".".join((self.opcode,) + self.modifiers)


Statement = Union[Label, Instruction]

# --------------------------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class RegDecl:
    """`.reg .b32 %r<22>;` is RegDecl("b32", "%r", 22): registers %r0 .. %r21. `.reg .b64 %SP;` has count
    None and declares the one name. `vector` is 2/4 for `.reg .v2 .f32 ...` (never emitted by nvcc)."""
    dtype: str
    name: str
    count: Optional[int]
    line: int
    vector: int = 1

    @property
    def names(self) -> tuple:
        if self.count is None:
            return (self.name,)
        return tuple(f"{self.name}{i}" for i in range(self.count))


@dataclass(frozen=True)
class VarDecl:
    """A variable in a state space (module or function scope, incl. `.param` variables of call sequences).

    space      "global" | "shared" | "local" | "const" | "param" (base name, `::` qualifiers dropped)
    dtype      element type ("b8", "f32", ..., "texref")
    align      alignment in bytes from `.align`, or None
    dims       array dimensions; () for a scalar, None for an unsized dimension (`sm[]`)
    extern     True for `.extern` (dynamic shared memory `.extern .shared .align 16 .b8 sm[];`)
    linkage    "visible" | "extern" | "weak" | "common" | None
    init       flattened initializer values (Imm or SymAddr) or None
    vector     1, 2 or 4 (from .v2/.v4 before the type)
    """
    name: str
    space: str
    dtype: str
    line: int
    align: Optional[int] = None
    dims: tuple = ()
    extern: bool = False
    linkage: Optional[str] = None
    init: Optional[tuple] = None
    vector: int = 1

    @property
    def is_dynamic(self) -> bool:
        """An unsized array (only meaningful for extern shared memory)."""
        return any(d is None for d in self.dims)

    @property
    def elements(self) -> Optional[int]:
        """Number of elements (vector lanes counted), or None when a dimension is unsized."""
        n = self.vector
        for d in self.dims:
            if d is None:
                return None
            n *= d
        return n


@dataclass(frozen=True)
class Param:
    """A kernel or function parameter: `.param .align 8 .b8 p[16]` -> Param("p", "b8", align=8, dims=(16,)).
    `ptr_space`/`ptr_align` come from the optional `.ptr .global .align N` attributes. `space` is "param"
    (or "reg" for the old `.reg` parameter form)."""
    name: str
    dtype: str
    align: Optional[int] = None
    dims: tuple = ()
    space: str = "param"
    ptr_space: Optional[str] = None
    ptr_align: Optional[int] = None
    vector: int = 1


@dataclass(frozen=True)
class Function:
    """An `.entry` (is_entry) or `.func`. `has_body` is False for a prototype (`.extern .func f(...);`).

    directives  performance directives in order: (("maxntid", (256, 1, 1)), ("minnctapersm", (2,)), ...);
                a flag directive such as `.noreturn` has ().
    branch_targets / call_prototypes  `L: .branchtargets a, b;` -> (("L", ("a", "b")),); `.callprototype`
                labels -> (("proto", "<declaration text>"),).
    """
    name: str
    is_entry: bool
    params: tuple
    return_params: tuple
    body: tuple
    reg_decls: tuple
    var_decls: tuple
    line: int
    linkage: Optional[str] = None
    has_body: bool = True
    directives: tuple = ()
    branch_targets: tuple = ()
    call_prototypes: tuple = ()

    @property
    def labels(self) -> dict:
        """Label name -> index into `body`."""
        return {s.name: i for i, s in enumerate(self.body) if isinstance(s, Label)}

    @property
    def instructions(self) -> tuple:
        return tuple(s for s in self.body if isinstance(s, Instruction))

    def reg_count(self, prefix: str) -> int:
        """Total registers declared under a name or range prefix (`%r` -> 22 for `%r<22>`)."""
        return sum(d.count if d.count is not None else 1 for d in self.reg_decls if d.name == prefix)


@dataclass(frozen=True)
class Module:
    """A parsed PTX module. `version` is the `.version` text ("9.0"); `target` the `.target` entries in order
    (("sm_90",) or ("sm_80", "debug")); `address_size` 32 or 64 (64 when absent); `files` the `.file` table as
    ((index, path), ...); `globals` module-scope VarDecls; `functions` entries and funcs in source order."""
    version: str
    target: tuple
    address_size: int
    functions: tuple
    globals: tuple
    filename: str = "<ptx>"
    files: tuple = ()

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name and f.has_body:
                return f
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def entries(self) -> tuple:
        return tuple(f for f in self.functions if f.is_entry)

    @property
    def file_table(self) -> dict:
        return dict(self.files)


__all__ = [
    "Reg", "SpecialReg", "Imm", "Sym", "Vec", "Addr", "Bracket", "RegPair", "NotPred", "Sink", "ParamList",
    "Operand", "SymAddr", "Predicate", "Label", "Instruction", "Statement", "RegDecl", "VarDecl", "Param",
    "Function", "Module",
]

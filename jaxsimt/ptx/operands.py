"""What ptxas checks before it accepts an instruction, as data: the operands each opcode takes (count, kind,
type), the type suffixes it needs, and the register class and width each operand position requires.

`FORMS[opcode]` is a function of the instruction giving the accepted operand lists; each operand slot is
`kind:type` (optional slots end in '?'):

    kind  d  destination register (or `_`)            s  source: register, immediate, special register, symbol
          p  predicate source (`!%p` allowed)          m  address `[...]`
          l  label                                     i  integer immediate
          v  ld/st value: a register, or `{...}` of .vN   x  anything (checked by the lowering: fragments)
          P  predicate destination, or `%p|%q`          q  `%r|%p` (shfl's value and predicate)
          r  a register or a variable's name (no immediate)
          w  mov's operands: as d (first) or s, or `{a, b}` of registers of the type's width / n
    type  T  the instruction's (last) type suffix        T0 its first type suffix      W  twice T's width
          u32 b32 u64 pred   a fixed type              -  untyped

`validate(module)` applies them (plus kernel parameters, `.shared` sizes and entries without body) and
raises `PtxInvalidError` naming the file, line, instruction and what was expected vs given. Operand types
follow the PTX ISA's type-size compatibility: a .bN operand takes any N-bit register, .uN/.sN a .u/.s/.bN
register, .fN a .fN/.bN register; `ld`, `st` and `cvt` (and 8-bit types) also take wider registers; a
.global or generic address register is as wide as `.address_size`.
"""
from __future__ import annotations

from typing import Optional

from jaxsimt.ptx import ast
from jaxsimt.ptx.errors import PtxInvalidError

_BITS = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
         "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "tf32": 32, "b64": 64,
         "u64": 64, "s64": 64, "f64": 64, "b128": 128}
_CMP = frozenset("eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan".split())
_CMP_DESC = "a comparison (.eq, .lt, ...)"


def _f(*forms):
    out = []
    for f in forms:
        out.append(tuple(tuple(s.rstrip("?").split(":")) + (s.endswith("?"),) for s in f.split()))
    return tuple(out)


def _fixed(*forms):
    parsed = _f(*forms)
    return lambda ins: parsed


_UN = _fixed("d:T s:T")
_BIN = _fixed("d:T s:T s:T")
_TER = _fixed("d:T s:T s:T s:T")
_NONE = _fixed("")


def _mul(ins):
    return _f("d:W s:T s:T") if "wide" in ins.modifiers else _f("d:T s:T s:T")


def _mad(ins):
    return _f("d:W s:T s:T s:W") if "wide" in ins.modifiers else _f("d:T s:T s:T s:T")


def _setp(ins):
    if {"and", "or", "xor"} & set(ins.modifiers):
        return _f("P:pred s:T s:T p:pred")
    return _f("P:pred s:T s:T")


def _set(ins):
    if {"and", "or", "xor"} & set(ins.modifiers):
        return _f("d:T0 s:T s:T p:pred")
    return _f("d:T0 s:T s:T")


def _shfl(ins):
    if "sync" in ins.modifiers:
        return _f("q:b32 s:b32 s:b32 s:b32 s:b32")
    return _f("q:b32 s:b32 s:b32 s:b32")


def _vote(ins):
    d = "d:b32" if "ballot" in ins.modifiers else "d:pred"
    return _f(f"{d} p:pred s:b32") if "sync" in ins.modifiers else _f(f"{d} p:pred")


def _atom(ins):
    if "cas" in ins.modifiers:
        return _f("d:T m:- s:T s:T")
    return _f("d:T m:- s:T")


def _bar(ins):
    if {"red", "arrive"} & set(ins.modifiers):
        return _f("x:- x:-?", "x:- x:- x:- x:-?")  # refused by the lowering; counted only
    return _f("s:u32 s:u32?")


def _cp_async(ins):
    return _f("m:- m:- i:- s:u32? x:-?")


FORMS: dict = {
    "mov": _fixed("w:T w:T"), "cvta": _fixed("d:T r:T"), "isspacep": _fixed("P:pred s:T"),
    "cvt": _fixed("d:T0 s:T"),
    "ld": lambda ins: _f("v:T m:- s:b64" if "L2::cache_hint" in ins.modifiers else "v:T m:-"),
    "ldu": _fixed("v:T m:-"),
    "st": lambda ins: _f("m:- v:T s:b64" if "L2::cache_hint" in ins.modifiers else "m:- v:T"),
    "atom": _atom, "red": _fixed("m:- s:T"),
    "add": _BIN, "sub": _BIN, "mul": _mul, "mad": _mad, "mul24": _BIN, "mad24": _TER, "fma": _TER,
    "div": _BIN, "rem": _BIN, "min": _fixed("d:T s:T s:T", "d:T s:T s:T s:T"),
    "max": _fixed("d:T s:T s:T", "d:T s:T s:T s:T"), "abs": _UN, "neg": _UN, "sad": _TER,
    "dp4a": _fixed("d:b32 s:b32 s:b32 s:b32"), "dp2a": _fixed("d:b32 s:b32 s:b32 s:b32"),
    "copysign": _BIN, "testp": _fixed("P:pred s:T"), "rcp": _UN, "sqrt": _UN, "rsqrt": _UN, "ex2": _UN,
    "lg2": _UN, "sin": _UN, "cos": _UN, "tanh": _UN,
    "and": _BIN, "or": _BIN, "xor": _BIN, "not": _UN, "cnot": _UN,
    "shl": _fixed("d:T s:T s:u32"), "shr": _fixed("d:T s:T s:u32"),
    "shf": _fixed("d:b32 s:b32 s:b32 s:u32"), "lop3": _fixed("d:T s:T s:T s:T i:-"), "prmt": _TER,
    "bfe": _fixed("d:T s:T s:u32 s:u32"), "bfi": _fixed("d:T s:T s:T s:u32 s:u32"),
    "bfind": _fixed("d:u32 s:T"), "popc": _fixed("d:u32 s:T"), "clz": _fixed("d:u32 s:T"), "brev": _UN,
    "setp": _setp, "set": _set, "selp": _fixed("d:T s:T s:T p:pred"),
    "bra": _fixed("l:-"), "ret": _NONE, "exit": _NONE, "trap": _NONE, "nanosleep": _fixed("s:u32"),
    "bar": _bar, "barrier": _bar, "bar.warp.sync": _fixed("s:b32"), "membar": _NONE, "fence": _NONE,
    "shfl": _shfl, "vote": _vote, "activemask": _fixed("d:b32"),
    "redux": _fixed("d:T s:T s:b32"), "match": _fixed("q:b32 s:T s:b32"),
    "griddepcontrol": _NONE, "prefetch": _fixed("m:-"), "prefetchu": _fixed("m:-"),
    "wmma.load": _fixed("x:- m:-", "x:- m:- s:u32"), "wmma.store": _fixed("m:- x:-", "m:- x:- s:u32"),
    "wmma.mma": _fixed("x:- x:- x:- x:-"), "mma": _fixed("x:- x:- x:- x:-"), "ldmatrix": _fixed("x:- m:-"),
    "cp.async": _cp_async, "cp.async.commit_group": _NONE, "cp.async.wait_group": _fixed("i:-"),
    "cp.async.wait_all": _NONE,
}

# How many type suffixes each opcode takes (min, max); opcodes not listed take exactly one.
N_TYPES: dict = {
    "cvt": (2, 2), "set": (2, 2), "dp4a": (2, 2), "dp2a": (2, 2), "mma": (4, 4), "wmma.mma": (2, 4),
    "bra": (0, 0), "call": (0, 0), "ret": (0, 0), "exit": (0, 0), "trap": (0, 0), "bar": (0, 1),
    "barrier": (0, 1), "bar.warp.sync": (0, 0), "membar": (0, 0), "fence": (0, 0), "griddepcontrol": (0, 0),
    "prefetch": (0, 0), "prefetchu": (0, 0), "cp.async": (0, 0), "cp.async.commit_group": (0, 0),
    "cp.async.wait_group": (0, 0), "cp.async.wait_all": (0, 0), "isspacep": (0, 0), "vote": (1, 1),
    "testp": (1, 1),
}

# Modifier groups an opcode needs one of: {opcode: (group, description)}.
NEEDS: dict = {
    "setp": (_CMP, _CMP_DESC), "set": (_CMP, _CMP_DESC),
    "vote": (frozenset("all any uni ballot".split()), "a mode (.all, .any, .uni, .ballot)"),
    "shfl": (frozenset("up down bfly idx".split()), "a mode (.up, .down, .bfly, .idx)"),
    "testp": (frozenset("finite infinite number notanumber normal subnormal".split()), "a test (.finite, ...)"),
    "atom": (frozenset("and or xor cas exch add inc dec min max".split()), "an operation (.add, .cas, ...)"),
    "red": (frozenset("and or xor add inc dec min max".split()), "an operation (.add, .min, ...)"),
    "shf": (frozenset("l r".split()), "a direction (.l, .r)"),
}

_I16UP = frozenset("u16 u32 u64 s16 s32 s64".split())
_FLOATS = frozenset("f16 f16x2 bf16 bf16x2 f32 f64".split())
# Type suffixes an opcode takes where the PTX ISA is narrower than `opcodes.SUPPORTED_OPCODES` (which lists
# what the emulator executes): no bit types or 8-bit integers in arithmetic, signed-only abs and neg.
TYPES_OF: dict = {
    "add": _I16UP | _FLOATS, "sub": _I16UP | _FLOATS, "mul": _I16UP | _FLOATS, "mad": _I16UP | _FLOATS,
    "div": _I16UP | {"f32", "f64"}, "rem": _I16UP, "min": _I16UP | _FLOATS, "max": _I16UP | _FLOATS,
    "abs": frozenset("s16 s32 s64".split()) | _FLOATS, "neg": frozenset("s16 s32 s64".split()) | _FLOATS,
    "setp": _I16UP | _FLOATS | {"b16", "b32", "b64"}, "selp": _I16UP | {"b16", "b32", "b64", "f32", "f64"},
}
# Modifiers that only go with some types: {(opcode, modifier): types}.
MODIFIER_TYPES: dict = {
    ("mul", "wide"): frozenset("u16 u32 s16 s32".split()), ("mad", "wide"): frozenset("u16 u32 s16 s32".split()),
    ("mul", "hi"): _I16UP, ("mul", "lo"): _I16UP, ("mad", "hi"): _I16UP, ("mad", "lo"): _I16UP,
}
# Integer multiplies name the half of the product they keep.
_INT_MODE = frozenset("hi lo wide".split())

# Opcodes whose value operands may be registers wider than the type suffix (PTX ISA: ld, st, cvt).
_WIDER = frozenset("ld ldu st cvt".split())
_INT_MIN, _INT_END = -(1 << 63), 1 << 64


def _reg_types(fn: ast.Function) -> dict:
    out = {}
    for d in fn.reg_decls:
        if d.vector == 1:
            for n in d.names:
                out[n] = d.dtype
    for p in fn.params + fn.return_params:
        if p.space == "reg":
            out[p.name] = p.dtype
    return out


def compatible(reg: str, want: str, wider: bool = False) -> bool:
    """Whether a register of PTX type `reg` may stand where an operand of type `want` is expected."""
    if want == "-" or reg not in _BITS or want not in _BITS:
        return True
    if (reg == "pred") != (want == "pred"):
        return False
    rb, wb = _BITS[reg], _BITS[want]
    if rb != wb and not (wider and rb > wb) and not (wb == 8 and rb in (16, 32)):
        return False
    rk, wk = reg[0], want[0]
    if rk == "b" or wk == "b" or want == "tf32":
        return True
    if wk in "us":
        return rk in "us"
    return rk == "f" or reg == "bf16" or reg == "bf16x2" or rk == want[0]


class _Check:
    def __init__(self, module: ast.Module, fn: ast.Function):
        self.mod, self.fn = module, fn
        self.regs = _reg_types(fn)
        self.vars = {v.name: v for v in module.globals + fn.var_decls}

    def fail(self, ins, what):
        raise PtxInvalidError(f"{ins.name}: {what}", self.mod.filename, ins.line, ins.text)

    def slot_type(self, ins, ty: str) -> str:
        types = ins.types
        if ty == "T":
            return types[-1] if types else "-"
        if ty == "T0":
            return types[0] if types else "-"
        if ty == "W":
            t = types[-1] if types else "-"
            return f"{t[0]}{_BITS[t] * 2}" if t in _BITS and t[0] in "usb" and _BITS[t] < 64 else "-"
        return ty

    def given(self, op) -> str:
        if isinstance(op, ast.Reg):
            t = self.regs.get(op.name)
            return f"{op.name} (.{t})" if t else op.name
        if isinstance(op, ast.Imm):
            return f"the immediate {op.raw or op.value}"
        if isinstance(op, ast.SpecialReg):
            return f"the special register {op.name}" + (f".{op.component}" if op.component else "")
        if isinstance(op, ast.Sym):
            return f"the symbol {op.name}"
        if isinstance(op, ast.Addr):
            return "an address [...]"
        if isinstance(op, ast.Vec):
            return f"a vector of {len(op.elems)}"
        if isinstance(op, ast.RegPair):
            return f"{op.first}|{op.second}"
        if isinstance(op, ast.NotPred):
            return f"!{op.reg}"
        if isinstance(op, ast.Sink):
            return "_"
        return type(op).__name__

    def reg(self, ins, k, op_name, want, role, wider=False):
        t = self.regs.get(op_name)
        if t is not None and not compatible(t, want, wider):
            self.fail(ins, f"operand {k + 1} ({role}) must be a {self.describe(want, wider)} register, got "
                           f"{op_name} (.{t})")

    @staticmethod
    def describe(want, wider=False):
        if want == "pred":
            return ".pred"
        b = _BITS.get(want)
        return f"{b}-bit{' or wider' if wider else ''} .{want}-compatible" if b else f".{want}"

    def imm(self, ins, k, op: ast.Imm, want, role):
        if op.is_float:
            if want in _BITS and want[0] == "b" and op.width != _BITS[want]:
                self.fail(ins, f"operand {k + 1} ({role}): the {op.width}-bit float immediate {op.raw} for a "
                               f".{want} operand")
            if want in _BITS and want[0] in "usp":
                self.fail(ins, f"operand {k + 1} ({role}) must be an integer, got the float immediate "
                               f"{op.raw or op.value}")
            return
        if not _INT_MIN <= op.value < _INT_END:
            self.fail(ins, f"operand {k + 1} ({role}): the immediate {op.raw or op.value} does not fit in 64 bits")

    def source(self, ins, k, op, want, role, wider=False):
        if isinstance(op, ast.Reg):
            self.reg(ins, k, op.name, want, role, wider)
        elif isinstance(op, ast.Imm):
            self.imm(ins, k, op, want, role)
        elif isinstance(op, (ast.SpecialReg, ast.Sym)):
            pass
        else:
            self.fail(ins, f"operand {k + 1} ({role}) must be a register or an immediate, got {self.given(op)}")

    def dest(self, ins, k, op, want, role, wider=False):
        if isinstance(op, ast.Sink):
            return
        if not isinstance(op, ast.Reg):
            self.fail(ins, f"operand {k + 1} ({role}) must be a register, got {self.given(op)}")
        self.reg(ins, k, op.name, want, role, wider)

    def address(self, ins, k, op):
        if isinstance(op, ast.Bracket):
            return
        if not isinstance(op, ast.Addr):
            self.fail(ins, f"operand {k + 1} must be an address [...], got {self.given(op)}")
        if isinstance(op.base, ast.Reg):
            t = self.regs.get(op.base.name)
            if t is None:
                return
            space = ins.space or "generic"
            width = self.mod.address_size if space in ("global", "generic") else None
            ok = t in _BITS and t != "pred" and t[0] in "usb" and (
                _BITS[t] == width if width else _BITS[t] in (32, 64))
            if not ok:
                need = f"{width}-bit" if width else "32- or 64-bit"
                self.fail(ins, f"operand {k + 1}: a .{space} address register must be a {need} integer register, "
                               f"got {op.base.name} (.{t})")

    def operand(self, ins, k, op, kind, ty):
        want = self.slot_type(ins, ty)
        wider = ins.opcode in _WIDER
        if kind == "d":
            self.dest(ins, k, op, want, "destination", wider)
        elif kind == "s":
            self.source(ins, k, op, want, "source", wider and ins.opcode == "cvt")
        elif kind == "p":
            if isinstance(op, ast.NotPred):
                self.reg(ins, k, op.reg, "pred", "predicate")
            else:
                self.source(ins, k, op, "pred", "predicate")
        elif kind == "P":
            if isinstance(op, ast.RegPair):
                for name in (op.first, op.second):
                    self.reg(ins, k, name, "pred", "predicate destination")
            else:
                self.dest(ins, k, op, "pred", "predicate destination")
        elif kind == "q":
            if isinstance(op, ast.RegPair):
                self.reg(ins, k, op.first, want, "destination")
                self.reg(ins, k, op.second, "pred", "predicate destination")
            else:
                self.dest(ins, k, op, want, "destination")
        elif kind == "m":
            self.address(ins, k, op)
        elif kind == "l":
            if not isinstance(op, ast.Sym):
                self.fail(ins, f"operand {k + 1} must be a label, got {self.given(op)}")
        elif kind == "i":
            if not isinstance(op, ast.Imm) or op.is_float:
                self.fail(ins, f"operand {k + 1} must be an integer immediate, got {self.given(op)}")
            self.imm(ins, k, op, "-", "immediate")
        elif kind == "r":
            if isinstance(op, ast.Reg):
                self.reg(ins, k, op.name, want, "source")
            elif not isinstance(op, ast.Sym):
                self.fail(ins, f"operand {k + 1} (source) must be a register or a variable, got {self.given(op)}")
        elif kind == "w":
            if isinstance(op, ast.Vec):
                other = ins.operands[1 - k] if len(ins.operands) == 2 else None
                bits = _BITS.get(want)
                if isinstance(other, ast.Vec) or bits is None or bits % len(op.elems) or want == "pred":
                    self.fail(ins, f"operand {k + 1}: a vector {{...}} of {len(op.elems)} does not pack into .{want}")
                part = f"b{bits // len(op.elems)}"
                for e in op.elems:
                    if k == 0:
                        self.dest(ins, k, e, part, "destination element")
                    else:
                        self.source(ins, k, e, part, "source element")
            elif k == 0:
                self.dest(ins, k, op, want, "destination")
            else:
                self.source(ins, k, op, want, "source")
        elif kind == "v":
            elems = op.elems if isinstance(op, ast.Vec) else (op,)
            if isinstance(op, ast.Vec) != (ins.vector > 1) or len(elems) != ins.vector:
                self.fail(ins, f"operand {k + 1} must be {ins.vector} value{'s' if ins.vector > 1 else ''} "
                               f"for .v{ins.vector}" if ins.vector > 1 else
                               f"operand {k + 1} must be one value (no .vN), got {self.given(op)}")
            store = ins.opcode == "st"
            for e in elems:
                if store:
                    self.source(ins, k, e, want, "value", True)
                else:
                    self.dest(ins, k, e, want, "destination", True)

    def instruction(self, ins: ast.Instruction):
        op = ins.opcode
        if op not in FORMS and op not in N_TYPES and op != "call":
            return  # not executed here: `opcodes.check_supported` refuses it by name
        lo, hi = N_TYPES.get(op, (1, 1))
        if not lo <= len(ins.types) <= hi:
            exp = f"{lo}" if lo == hi else f"{lo} to {hi}"
            got = " ".join("." + t for t in ins.types) or "none"
            self.fail(ins, f"takes {exp} type suffix{'es' if hi != 1 else ''}, got {got}")
        allowed = TYPES_OF.get(op)
        if allowed is not None and ins.types and ins.types[-1] not in allowed:
            self.fail(ins, f"type .{ins.types[-1]} not allowed; {op} takes "
                           + " ".join("." + t for t in sorted(allowed)))
        for m in ins.modifiers:
            mt = MODIFIER_TYPES.get((op, m))
            if mt is not None and ins.types and ins.types[-1] not in mt:
                self.fail(ins, f".{m} needs one of the types " + " ".join("." + t for t in sorted(mt))
                          + f", got .{ins.types[-1]}")
        if op in ("mul", "mad") and ins.types and ins.types[-1] in _I16UP and not _INT_MODE & set(ins.modifiers):
            self.fail(ins, "an integer multiply needs .lo, .hi or .wide")
        need = NEEDS.get(op)
        if need is not None and not need[0] & set(ins.modifiers):
            self.fail(ins, f"needs {need[1]}")
        if op == "call":
            ops = ins.operands
            if len(ops) < 3 or not isinstance(ops[0], ast.ParamList) or not isinstance(ops[2], ast.ParamList):
                self.fail(ins, "expected call (returns), function, (arguments)")
            return
        forms_of = FORMS.get(op)
        if forms_of is None:
            return
        forms = forms_of(ins)
        n = len(ins.operands)
        fits = [f for f in forms if sum(1 for s in f if not s[2]) <= n <= len(f)]
        if not fits:
            counts = sorted({c for f in forms for c in range(sum(1 for s in f if not s[2]), len(f) + 1)})
            exp = " or ".join(str(c) for c in counts)
            self.fail(ins, f"takes {exp} operand{'s' if counts != [1] else ''}, got {n}")
        form = fits[0]
        for k, (o, slot) in enumerate(zip(ins.operands, form)):
            self.operand(ins, k, o, slot[0], slot[1])


def check_function(module: ast.Module, fn: ast.Function) -> None:
    """Raise PtxInvalidError for the first instruction of `fn` ptxas would refuse (see the module doc)."""
    c = _Check(module, fn)
    for ins in fn.instructions:
        c.instruction(ins)


def check_declarations(module: ast.Module, fn: Optional[ast.Function] = None) -> None:
    """Kernel parameters (no .pred), arrays of every state space (no zero dimension), every `.entry` with a
    body; of `fn` only (and the module's variables), or of every function."""
    where = module.filename
    fns = [fn] if fn is not None else list(module.functions)
    for v in module.globals:
        if v.dims and any(d == 0 for d in v.dims):
            raise PtxInvalidError(f"array {v.name} of .{v.space} has a zero dimension", where, v.line)
    for f in fns:
        for v in f.var_decls:
            if v.dims and any(d == 0 for d in v.dims):
                raise PtxInvalidError(f"array {v.name} of .{v.space} has a zero dimension", where, v.line)
        if f.is_entry and not f.has_body:
            raise PtxInvalidError(f"kernel {f.name} (.entry) has no body", where, f.line)
        if f.is_entry:
            for p in f.params:
                if p.dtype == "pred":
                    raise PtxInvalidError(f"kernel {f.name}: parameter {p.name} of type .pred (kernel "
                                          f"parameters are .b/.u/.s/.f types)", where, f.line)


def validate(module: ast.Module) -> None:
    """Everything ptxas checks that this module describes: declarations and every instruction's operands."""
    check_declarations(module)
    for fn in module.functions:
        check_function(module, fn)

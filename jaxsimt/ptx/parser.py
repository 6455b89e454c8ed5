"""PTX parser: hand-written recursive descent over the tokens of `lexer.py`, producing `ast.Module`.

Scopes: `{ }` blocks inside a function body are flattened. A name declared in a nested block (register or
variable, e.g. the `.param .b32 param0;` of each call sequence or the `.reg .f16 low, high;` of inline asm) is
renamed `name$sK`, K being the block's ordinal in the function (1, 2, ...), and every use inside the block
refers to the new name, so all names of a function are unique. Labels are function-wide and keep their names.
"""
from __future__ import annotations

import re
import struct

from jaxsimt.ptx import ast
from jaxsimt.ptx.errors import PtxSyntaxError
from jaxsimt.ptx.lexer import tokenize
from jaxsimt.ptx.opcodes import COMPOUND_OPCODES, KNOWN_OPCODES, MEMORY_OPCODES, SPACES, TYPES

_SPECIAL = re.compile(r"%(?:(tid|ntid|ctaid|nctaid|cluster_ctaid|cluster_nctaid|clusterid|nclusterid)(?:\.([xyz]))?"
                      r"|(laneid|warpid|nwarpid|smid|nsmid|gridid|clock|clock_hi|clock64|lanemask_eq|lanemask_le"
                      r"|lanemask_lt|lanemask_ge|lanemask_gt|globaltimer|globaltimer_lo|globaltimer_hi"
                      r"|total_smem_size|dynamic_smem_size|aggr_smem_size|cluster_ctarank|cluster_nctarank"
                      r"|is_explicit_cluster|current_graph_exec|reserved_smem_offset_begin"
                      r"|reserved_smem_offset_end|reserved_smem_offset_cap|reserved_smem_offset_\d"
                      r"|pm[0-7]|pm[0-7]_64|envreg(?:[12]?\d|3[01])))$", re.ASCII)
_VAR_SPACES = {".global": "global", ".shared": "shared", ".local": "local", ".const": "const",
               ".param": "param", ".tex": "tex"}
_LINKAGE = {".visible": "visible", ".extern": "extern", ".weak": "weak", ".common": "common"}
_PERF_DIRECTIVES = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".noreturn",
                    ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".blocksareclusters",
                    ".abi_preserve", ".abi_preserve_control"}
_VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}
_DTYPE_DIRS = {"." + t for t in TYPES} | {".texref", ".samplerref", ".surfref"}
_BINOPS = {"*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, ">": 7, "<=": 7, ">=": 7,
           "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1}
_MASK64 = (1 << 64) - 1
_MAX_NESTING = 64
_MAX_REGS = 1 << 24


def parse(text: str, filename: str = "<ptx>") -> ast.Module:
    """Parse PTX source text into an `ast.Module`; raise PtxSyntaxError (file, line, text) on bad input."""
    return _Parser(text, filename).module()


def _int_value(raw: str) -> int:
    s = raw[:-1] if raw.endswith("U") else raw
    if s[:2] in ("0x", "0X"):
        return int(s[2:], 16)
    if s[:2] in ("0b", "0B"):
        return int(s[2:], 2)
    if len(s) > 1 and s[0] == "0":
        if any(c in "89" for c in s):
            raise ValueError(raw)
        return int(s, 8)
    return int(s)


def _hex_float(raw: str) -> ast.Imm:
    bits = int(raw[2:], 16)
    if raw[1] in "fF":
        return ast.Imm(struct.unpack("<f", struct.pack("<I", bits))[0], True, raw, bits, 32)
    return ast.Imm(struct.unpack("<d", struct.pack("<Q", bits))[0], True, raw, bits, 64)


def _dec_float(raw: str) -> ast.Imm:
    v = float(raw)
    return ast.Imm(v, True, raw, struct.unpack("<Q", struct.pack("<d", v))[0], 64)


def _negate(imm: ast.Imm, raw: str) -> ast.Imm:
    if not imm.is_float:
        return ast.Imm(-imm.value, False, raw)
    sign = 1 << (imm.width - 1)
    return ast.Imm(-imm.value, True, raw, imm.bits ^ sign, imm.width)


class _Scope:
    """Names declared in one `{ }` level: original name -> unique name, and register ranges (prefix -> count)."""
    __slots__ = ("ordinal", "regs", "ranges", "vars")

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.regs: dict = {}
        self.ranges: dict = {}
        self.vars: dict = {}


class _Parser:
    def __init__(self, text: str, filename: str):
        self.src = text
        self.filename = filename
        self.lines = text.split("\n")
        t = tokenize(text, filename)
        self.kind, self.text, self.line, self.pos = t.kind, t.text, t.line, t.pos
        self.i = 0
        self.depth = 0

    # ---------------------------------------------------------------------------------- token helpers

    def error(self, msg: str, i: int | None = None):
        i = self.i if i is None else i
        ln = self.line[min(i, len(self.line) - 1)]
        src = self.lines[ln - 1].strip() if 0 < ln <= len(self.lines) else ""
        tok = self.text[min(i, len(self.text) - 1)]
        raise PtxSyntaxError(f"{msg} at {tok!r}", self.filename, ln, src)

    def peek(self, k: int = 0) -> str:
        return self.text[min(self.i + k, len(self.text) - 1)]

    def peek_kind(self, k: int = 0) -> str:
        return self.kind[min(self.i + k, len(self.kind) - 1)]

    def next(self) -> str:
        if self.kind[self.i] == "eof":
            self.error("unexpected end of file")
        t = self.text[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> bool:
        if self.text[self.i] == text and self.kind[self.i] in ("p", "dir"):
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> None:
        if not self.accept(text):
            self.error(f"expected {what or repr(text)}")

    def expect_kind(self, kind: str, what: str) -> str:
        if self.kind[self.i] != kind:
            self.error(f"expected {what}")
        return self.next()

    def expect_int(self, what: str = "an integer") -> int:
        v = self.const_expr(what)
        if v.is_float:
            self.error(f"expected {what}", self.i - 1)
        return v.value

    def ident(self, what: str = "a name") -> str:
        if self.kind[self.i] != "id":
            self.error(f"expected {what}")
        return self.next()

    def skip_line(self, ln: int) -> None:
        while self.kind[self.i] != "eof" and self.line[self.i] == ln:
            self.i += 1

    def skip_past_semicolon(self) -> None:
        while not self.accept(";"):
            self.next()

    # ---------------------------------------------------------------------------------- module

    def module(self) -> ast.Module:
        self.version, self.target, self.address_size = None, (), 64
        self.files: list = []
        self.functions: list = []
        self.globals: list = []
        self.global_names: set = set()
        while self.kind[self.i] != "eof":
            self.top_level()
        if self.version is None:
            raise PtxSyntaxError("missing .version directive", self.filename, 1, "")
        return ast.Module(self.version, self.target, self.address_size, tuple(self.functions),
                          tuple(self.globals), self.filename, tuple(self.files))

    def top_level(self) -> None:
        if self.kind[self.i] != "dir":
            if self.accept(";"):
                return
            self.error("expected a directive (.version, .entry, .func, .global, ...)")
        d = self.peek()
        ln = self.line[self.i]
        if d == ".version":
            self.i += 1
            if self.kind[self.i] not in ("flt", "int"):
                self.error("expected a version number such as 9.0")
            self.version = self.next()
        elif d == ".target":
            self.i += 1
            names = [self.ident("a target such as sm_90")]
            while self.accept(","):
                names.append(self.ident("a target option"))
            self.target = tuple(names)
        elif d == ".address_size":
            self.i += 1
            self.address_size = self.expect_int("32 or 64")
            if self.address_size not in (32, 64):
                self.error("address size must be 32 or 64", self.i - 1)
        elif d == ".file":
            self.i += 1
            idx = self.expect_int("a file index")
            name = self.expect_kind("str", "a quoted file name")
            self.files.append((idx, name[1:-1]))
            while self.accept(","):
                self.expect_int("a timestamp or size")
        elif d == ".section":
            self.i += 1
            self.skip_section(ln)
        elif d == ".pragma":
            self.i += 1
            self.skip_past_semicolon()
        elif d == ".alias":
            self.i += 1
            self.skip_past_semicolon()
        else:
            linkage = None
            if d in _LINKAGE:
                linkage = _LINKAGE[d]
                self.i += 1
            d = self.peek()
            if d in (".entry", ".func"):
                self.i += 1
                self.functions.append(self.function(d == ".entry", linkage, ln))
            elif d.split("::")[0] in _VAR_SPACES:
                self.i += 1
                for v in self.var_decl(_VAR_SPACES[d.split("::")[0]], linkage, ln, None):
                    if v.name in self.global_names and linkage != "extern":
                        self.error(f"duplicate declaration of {v.name}", self.i - 1)
                    self.global_names.add(v.name)
                    self.globals.append(v)
            else:
                self.error("unknown or misplaced directive")

    def skip_section(self, ln: int) -> None:
        # `.section .debug_str { ... }`: skip the braced block; a section header without one ends at the line.
        while self.kind[self.i] != "eof" and self.peek() != "{" and self.line[self.i] == ln:
            self.i += 1
        if self.accept("{"):
            depth = 1
            while depth:
                t = self.next()
                if self.kind[self.i - 1] == "p":
                    depth += (t == "{") - (t == "}")

    # ---------------------------------------------------------------------------------- declarations

    def type_attrs(self, allow_ptr: bool = False):
        """Leading attributes of a declaration: returns (dtype, align, vector, ptr_space, ptr_align)."""
        dtype = align = ptr_space = ptr_align = None
        vector = 1
        in_ptr = False
        while self.kind[self.i] == "dir":
            d = self.peek()
            if d == ".align":
                self.i += 1
                a = self.expect_int("an alignment")
                if a <= 0 or a & (a - 1):
                    self.error("alignment must be a power of two", self.i - 1)
                if in_ptr:
                    ptr_align = a
                else:
                    align = a
            elif d in _VECTORS:
                self.i += 1
                vector = _VECTORS[d]
            elif d in _DTYPE_DIRS:
                if dtype is not None:
                    self.error("two types in one declaration")
                self.i += 1
                dtype = d[1:]
            elif d == ".ptr" and allow_ptr:
                self.i += 1
                in_ptr = True
            elif in_ptr and d.split("::")[0][1:] in SPACES:
                self.i += 1
                ptr_space = d[1:]
            elif d == ".attribute":
                self.i += 1
                self.expect("(")
                depth = 1
                while depth:
                    t = self.next()
                    if self.kind[self.i - 1] == "p":
                        depth += (t == "(") - (t == ")")
            else:
                self.error("unexpected directive in declaration")
        if dtype is None:
            self.error("expected a type (.b32, .f32, .u64, ...)")
        return dtype, align, vector, ptr_space, ptr_align

    def dims(self) -> tuple:
        out = []
        while self.accept("["):
            if self.accept("]"):
                out.append(None)
                continue
            n = self.expect_int("an array size")
            if n < 0:
                self.error("negative array size", self.i - 1)
            out.append(n)
            self.expect("]")
        return tuple(out)

    def var_decl(self, space: str, linkage, ln: int, fn) -> list:
        dtype, align, vector, _, _ = self.type_attrs()
        out = []
        while True:
            name_i = self.i
            name = self.ident("a variable name")
            dims = self.dims()
            init = None
            if self.accept("="):
                vals: list = []
                self.initializer(vals)
                init = tuple(vals)
            if fn is not None:
                name = fn.declare_var(name, name_i)
            out.append(ast.VarDecl(name, space, dtype, ln, align, dims, linkage == "extern", linkage, init,
                                   vector))
            if not self.accept(","):
                break
        self.expect(";", "';' after the declaration")
        return out

    def initializer(self, vals: list, depth: int = 0) -> None:
        if depth > _MAX_NESTING:
            self.error("initializer nested too deeply")
        if self.accept("{"):
            if self.accept("}"):
                return
            self.initializer(vals, depth + 1)
            while self.accept(","):
                self.initializer(vals, depth + 1)
            self.expect("}", "'}' or ',' in the initializer")
            return
        if self.kind[self.i] == "id":
            generic = False
            name = self.next()
            if name == "generic" and self.accept("("):
                generic = True
                name = self.ident("a variable name")
                self.expect(")")
            off = 0
            if self.peek() in ("+", "-") and self.kind[self.i] == "p":
                sign = -1 if self.next() == "-" else 1
                off = sign * self.expect_int("an offset")
            vals.append(ast.SymAddr(name, off, generic))
            return
        vals.append(self.const_expr("an initializer value"))

    def param_list(self) -> tuple:
        """`( .param .u64 a, .param .align 8 .b8 b[16] )` after the '(' has been read."""
        out = []
        if self.accept(")"):
            return ()
        while True:
            d = self.peek()
            if d not in (".param", ".reg"):
                self.error("expected .param or .reg in the parameter list")
            self.i += 1
            dtype, align, vector, ptr_space, ptr_align = self.type_attrs(allow_ptr=True)
            name = self.ident("a parameter name")
            out.append(ast.Param(name, dtype, align, self.dims(), d[1:], ptr_space, ptr_align, vector))
            if self.accept(")"):
                return tuple(out)
            self.expect(",", "',' or ')' in the parameter list")

    # ---------------------------------------------------------------------------------- functions

    def function(self, is_entry: bool, linkage, ln: int) -> ast.Function:
        rets = ()
        if not is_entry and self.accept("("):
            rets = self.param_list()
        name = self.ident("a function name")
        params = ()
        if self.accept("("):
            params = self.param_list()
        directives = []
        while self.kind[self.i] == "dir":
            d = self.peek()
            if d == ".pragma":
                self.i += 1
                self.skip_past_semicolon()
                continue
            if d not in _PERF_DIRECTIVES:
                self.error("unknown function directive")
            self.i += 1
            vals = []
            if self.kind[self.i] in ("int", "p") and self.peek() not in ("{", ";"):
                vals.append(self.expect_int())
                while self.accept(","):
                    vals.append(self.expect_int())
            directives.append((d[1:], tuple(vals)))
        if self.accept(";"):
            return ast.Function(name, is_entry, params, rets, (), (), (), ln, linkage, False, tuple(directives))
        self.expect("{", "'{' to open the function body")
        body = _Body(self, name, params, rets)
        body.run()
        return ast.Function(name, is_entry, params, rets, tuple(body.stmts), tuple(body.reg_decls),
                            tuple(body.var_decls), ln, linkage, True, tuple(directives),
                            tuple(body.branch_targets), tuple(body.call_prototypes))

    # ---------------------------------------------------------------------------------- constant expressions

    def const_expr(self, what: str = "a constant", min_prec: int = 0) -> ast.Imm:
        start = self.i
        left = self.unary(what)
        while True:
            op = self.peek()
            prec = _BINOPS.get(op)
            if prec is None or prec <= min_prec or self.kind[self.i] != "p":
                break
            # `{%r1|%r2}` and `a, b` never reach here: '|' only joins two constants.
            self.i += 1
            right = self.const_expr(what, prec)
            if left.is_float or right.is_float:
                self.error("float operands in a constant expression", self.i - 1)
            left = ast.Imm(self.fold(op, left.value, right.value), False, "")
        if left.raw == "":
            raw = self.src[self.pos[start]:self.pos[self.i - 1] + len(self.text[self.i - 1])]
            left = ast.Imm(left.value, False, " ".join(raw.split()))
        return left

    def fold(self, op: str, a: int, b: int) -> int:
        if op in ("/", "%") and b == 0:
            self.error("division by zero in a constant expression", self.i - 1)
        if op == "/":
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        if op == "%":
            return a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1))
        if op in ("<<", ">>") and not 0 <= b < 128:
            self.error("shift amount out of range", self.i - 1)
        return {"*": lambda: a * b, "+": lambda: a + b, "-": lambda: a - b, "<<": lambda: (a << b) & _MASK64,
                ">>": lambda: a >> b, "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b),
                ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
                "&": lambda: a & b, "^": lambda: a ^ b, "|": lambda: a | b, "&&": lambda: int(bool(a and b)),
                "||": lambda: int(bool(a or b))}[op]()

    def unary(self, what: str) -> ast.Imm:
        self.depth += 1
        try:
            if self.depth > _MAX_NESTING:
                self.error("expression nested too deeply")
            return self.unary_inner(what)
        finally:
            self.depth -= 1

    def unary_inner(self, what: str) -> ast.Imm:
        k, t = self.kind[self.i], self.text[self.i]
        if k == "int":
            self.i += 1
            try:
                return ast.Imm(_int_value(t), False, t)
            except ValueError:
                self.error("bad integer literal", self.i - 1)
        if k == "hexf":
            self.i += 1
            return _hex_float(t)
        if k == "flt":
            self.i += 1
            return _dec_float(t)
        if k == "p" and t in ("-", "~", "!", "+"):
            self.i += 1
            v = self.unary(what)
            if t == "-":
                return _negate(v, "-" + v.raw)
            if v.is_float:
                if t == "+":
                    return v
                self.error("bad operator on a float", self.i - 1)
            if t == "~":
                return ast.Imm(~v.value, False, "~" + v.raw)
            if t == "!":
                return ast.Imm(int(not v.value), False, "!" + v.raw)
            return v
        if k == "p" and t == "(":
            self.i += 1
            v = self.const_expr(what)
            self.expect(")")
            return ast.Imm(v.value, v.is_float, "(" + v.raw + ")", v.bits, v.width)
        self.error(f"expected {what}")


class _Body:
    """Parses one function body: statements, declarations, nested scopes, `.loc` tracking."""

    def __init__(self, p: _Parser, fname: str, params, rets):
        self.p = p
        self.fname = fname
        self.stmts: list = []
        self.reg_decls: list = []
        self.var_decls: list = []
        self.branch_targets: list = []
        self.call_prototypes: list = []
        self.loc = None
        self.inlined_at = None
        self.pragmas: list = []  # `.pragma` strings waiting for the next instruction
        self.ordinal = 0
        self.scopes = [_Scope(0)]
        self.all_names: set = set()
        self.labels: dict = {}
        self.branch_uses: list = []
        for prm in tuple(params) + tuple(rets):
            self.scopes[0].vars[prm.name] = prm.name
            self.all_names.add(prm.name)

    # --------------------------------------------------------------------------- names

    def unique(self, name: str, scope: _Scope) -> str:
        if scope.ordinal == 0:
            return name
        new = f"{name}$s{scope.ordinal}"
        while new in self.all_names:
            new += "$"
        return new

    def declared_here(self, name: str) -> bool:
        sc = self.scopes[-1]
        if name in sc.regs or name in sc.vars:
            return True
        return self.range_lookup(sc, name)

    @staticmethod
    def range_lookup(sc: _Scope, name: str) -> bool:
        if not sc.ranges:
            return False
        j = len(name)
        while j > 0 and name[j - 1].isdigit():
            j -= 1
            digits = name[j:]
            if (digits == "0" or digits[0] != "0") and sc.ranges.get(name[:j], -1) > int(digits):
                return True
        return False

    def declare_var(self, name: str, tok_i: int) -> str:
        if self.declared_here(name):
            self.p.error(f"duplicate declaration of {name}", tok_i)
        sc = self.scopes[-1]
        new = self.unique(name, sc)
        sc.vars[name] = new
        self.all_names.add(new)
        return new

    def declare_reg(self, dtype: str, name: str, count, ln: int, vector: int, tok_i: int) -> None:
        sc = self.scopes[-1]
        if count is None:
            if self.declared_here(name):
                self.p.error(f"duplicate declaration of {name}", tok_i)
            new = self.unique(name, sc)
            sc.regs[name] = new
            self.all_names.add(new)
            self.reg_decls.append(ast.RegDecl(dtype, new, None, ln, vector))
        elif sc.ordinal == 0:
            if name in sc.ranges:
                self.p.error(f"duplicate declaration of {name}<{count}>", tok_i)
            sc.ranges[name] = count
            self.reg_decls.append(ast.RegDecl(dtype, name, count, ln, vector))
        else:
            for k in range(count):
                self.declare_reg(dtype, f"{name}{k}", None, ln, vector, tok_i)

    def resolve_reg(self, name: str):
        """The unique name of a declared register, or None."""
        for sc in reversed(self.scopes):
            r = sc.regs.get(name)
            if r is not None:
                return r
            if self.range_lookup(sc, name):
                return name
        return None

    def resolve_var(self, name: str) -> str:
        for sc in reversed(self.scopes):
            r = sc.vars.get(name)
            if r is not None:
                return r
        return name

    # --------------------------------------------------------------------------- statements

    def run(self) -> None:
        p = self.p
        while True:
            k, t = p.kind[p.i], p.text[p.i]
            if k == "eof":
                p.error("unexpected end of file inside a function body (missing '}')")
            if k == "p":
                if t == "{":
                    p.i += 1
                    self.ordinal += 1
                    self.scopes.append(_Scope(self.ordinal))
                    continue
                if t == "}":
                    p.i += 1
                    self.scopes.pop()
                    if not self.scopes:
                        break
                    continue
                if t == ";":
                    p.i += 1
                    continue
                if t == "@":
                    self.instruction()
                    continue
                p.error("unexpected token in function body")
            elif k == "dir":
                self.directive()
            elif k == "id":
                if p.peek(1) == ":" and p.peek_kind(1) == "p":
                    self.label()
                else:
                    self.instruction()
            else:
                p.error("unexpected token in function body")
        for name, i in self.branch_uses:
            if name not in self.labels:
                p.error(f"branch to undefined label {name}", i)

    def label(self) -> None:
        p = self.p
        i = p.i
        name = p.next()
        ln = p.line[i]
        p.i += 1  # ':'
        if name.startswith("%") or "." in name:
            p.error("bad label name", i)
        d = p.peek()
        if p.peek_kind() == "dir" and d in (".branchtargets", ".calltargets"):
            p.i += 1
            names = [p.ident("a label")]
            while p.accept(","):
                names.append(p.ident("a label"))
            p.expect(";")
            self.branch_targets.append((name, tuple(names)))
            if d == ".branchtargets":
                self.branch_uses.extend((n, i) for n in names)
            return
        if p.peek_kind() == "dir" and d == ".callprototype":
            start = p.pos[p.i]
            p.skip_past_semicolon()
            self.call_prototypes.append((name, " ".join(p.src[start:p.pos[p.i - 1]].split())))
            return
        if name in self.labels:
            p.error(f"duplicate label {name}", i)
        self.labels[name] = len(self.stmts)
        self.stmts.append(ast.Label(name, ln))

    def directive(self) -> None:
        p = self.p
        d = p.peek()
        ln = p.line[p.i]
        tok_i = p.i
        p.i += 1
        if d == ".reg":
            dtype, _, vector, _, _ = p.type_attrs()
            while True:
                ni = p.i
                name = p.ident("a register name")
                count = None
                if p.accept("<"):
                    if p.peek_kind() != "int":
                        p.error("expected a register count")
                    count = _int_value(p.next())
                    if not 0 < count <= _MAX_REGS:
                        p.error(f"register count must be in 1..{_MAX_REGS}", p.i - 1)
                    p.expect(">")
                self.declare_reg(dtype, name, count, ln, vector, ni)
                if not p.accept(","):
                    break
            p.expect(";", "';' after .reg")
        elif d.split("::")[0] in _VAR_SPACES:
            self.var_decls.extend(p.var_decl(_VAR_SPACES[d.split("::")[0]], None, ln, self))
        elif d == ".loc":
            f = p.expect_int("a file index")
            line = p.expect_int("a line number")
            col = p.expect_int("a column") if p.peek_kind() == "int" and p.line[p.i] == ln else 0
            inl = None
            while p.peek() == "," and p.line[p.i] == ln:
                p.i += 1
                key = p.ident("a .loc attribute")
                if key == "inlined_at":
                    inl = (p.expect_int(), p.expect_int(), p.expect_int())
                elif key == "function_name":
                    p.ident("a function name label")
                else:
                    p.skip_line(ln)
            self.loc, self.inlined_at = (f, line, col), inl
        elif d == ".pragma":
            while p.peek_kind() == "str":
                self.pragmas.append(p.next()[1:-1])
                p.accept(",")
            p.skip_past_semicolon()
        elif d in (".file", ".section"):
            p.error("directive not allowed inside a function", tok_i)
        else:
            p.error("unknown directive in function body", tok_i)

    def instruction(self) -> None:
        p = self.p
        start = p.i
        pred = None
        if p.accept("@"):
            neg = p.accept("!")
            ri = p.i
            r = p.ident("a predicate register")
            reg = self.resolve_reg(r)
            if reg is None:
                p.error(f"undeclared predicate register {r}", ri)
            pred = ast.Predicate(reg, neg)
        oi = p.i
        name = p.ident("an instruction")
        if name[0] in "%$" or name.endswith("."):
            p.error("bad instruction name", oi)
        ln = p.line[oi]
        opcode = None
        for c in COMPOUND_OPCODES:
            if name == c or name.startswith(c + "."):
                opcode = c
                break
        if opcode is None:
            opcode = name.split(".", 1)[0]
        mods = tuple(name[len(opcode) + 1:].split(".")) if len(name) > len(opcode) else ()
        if any(not m for m in mods):
            p.error("empty modifier in instruction name", oi)
        if opcode == "call":
            operands = self.call_operands()
        else:
            operands = []
            if p.peek() != ";":
                operands.append(self.operand())
                while p.accept(","):
                    operands.append(self.operand())
            operands = tuple(operands)
        if p.peek() != ";" or p.kind[p.i] != "p":
            if p.line[p.i] > p.line[p.i - 1]:
                p.error(f"missing ';' after the operands of {name}", p.i - 1)
            p.error(f"expected ',' or ';' after the operands of {name}")
        text = " ".join(p.src[p.pos[start]:p.pos[p.i]].split())
        p.i += 1
        types = tuple(m for m in mods if m in TYPES)
        space = None
        vector = 1
        for m in mods:
            base = m.split("::")[0]
            if space is None and base in SPACES:
                space = base
            elif m in ("v2", "v4", "v8"):
                vector = int(m[1])
        if space is None and opcode in MEMORY_OPCODES:
            space = "generic"
        if opcode == "bra" and operands and isinstance(operands[-1], ast.Sym):
            self.branch_uses.append((operands[-1].name, p.i - 2))
        self.stmts.append(ast.Instruction(opcode, mods, types, space, vector, pred, operands, ln, text,
                                          self.loc, self.inlined_at, opcode in KNOWN_OPCODES, tuple(self.pragmas)))
        self.pragmas = []

    def call_operands(self) -> tuple:
        p = self.p
        rets = ast.ParamList(())
        if p.peek() == "(":
            rets = self.paren_list()
            p.expect(",", "',' after the call's return list")
        target = self.operand()
        if not isinstance(target, (ast.Sym, ast.Reg)):
            p.error("expected a function name or register as the call target", p.i - 1)
        args = ast.ParamList(())
        out = [rets, target]
        if p.accept(","):
            if p.peek() == "(":
                args = self.paren_list()
                out.append(args)
                if p.accept(","):
                    out.append(ast.Sym(p.ident("a call prototype or target list")))
            else:
                out.append(args)
                out.append(ast.Sym(p.ident("a call prototype or target list")))
        else:
            out.append(args)
        return tuple(out)

    def paren_list(self) -> ast.ParamList:
        p = self.p
        p.expect("(")
        items = []
        if not p.accept(")"):
            items.append(self.operand())
            while p.accept(","):
                items.append(self.operand())
            p.expect(")", "')' or ',' in the call's parameter list")
        return ast.ParamList(tuple(items))

    # --------------------------------------------------------------------------- operands

    def operand(self):
        p = self.p
        k, t = p.kind[p.i], p.text[p.i]
        if k == "p":
            if t == "[":
                return self.address()
            if t == "{":
                p.i += 1
                elems = [self.operand()]
                while p.accept(","):
                    elems.append(self.operand())
                p.expect("}", "'}' or ',' in the vector operand")
                for e in elems:
                    if isinstance(e, (ast.Vec, ast.Addr, ast.Bracket, ast.ParamList, ast.RegPair)):
                        p.error("bad element in a vector operand", p.i - 1)
                return ast.Vec(tuple(elems))
            if t == "!" and p.peek_kind(1) == "id":
                p.i += 1
                r = self.name_operand()
                if not isinstance(r, ast.Reg):
                    p.error("'!' applies only to a predicate register", p.i - 1)
                return ast.NotPred(r)
            return p.const_expr("an operand")
        if k == "id":
            first = self.name_operand()
            if p.peek() == "|" and p.kind[p.i] == "p" and isinstance(first, ast.Reg):
                p.i += 1
                second = self.name_operand()
                if not isinstance(second, ast.Reg):
                    p.error("expected a predicate register after '|'", p.i - 1)
                return ast.RegPair(first, second)
            return first
        if k in ("int", "hexf", "flt"):
            return p.const_expr("an operand")
        p.error("expected an operand")

    def name_operand(self):
        p = self.p
        i = p.i
        t = p.next()
        if t == "_":
            return ast.Sink()
        r = self.resolve_reg(t)
        if r is not None:
            return ast.Reg(r)
        if t[0] == "%":
            m = _SPECIAL.match(t)
            if m is not None:
                if m.group(1):
                    return ast.SpecialReg("%" + m.group(1), m.group(2))
                return ast.SpecialReg("%" + m.group(3))
            p.error(f"undeclared register {t}", i)
        if "." in t:
            p.error("unexpected dotted name in operand position (missing ';'?)", i)
        return ast.Sym(self.resolve_var(t))

    def address(self):
        p = self.p
        p.expect("[")
        items = []
        while True:
            items.append(self.address_item())
            if not p.accept(","):
                break
        p.expect("]", "']' to close the address")
        if len(items) == 1:
            return items[0]
        return ast.Bracket(tuple(items))

    def address_item(self):
        p = self.p
        k = p.kind[p.i]
        if k == "id":
            base = self.name_operand()
            if not isinstance(base, (ast.Reg, ast.Sym)):
                p.error("bad address base", p.i - 1)
            off = 0
            if p.kind[p.i] == "p" and p.peek() in ("+", "-"):
                sign = -1 if p.next() == "-" else 1
                off = sign * p.expect_int("an address offset")
            return ast.Addr(base, off)
        if k == "p" and p.peek() == "{":
            return self.operand()
        return ast.Addr(None, p.expect_int("an address"))

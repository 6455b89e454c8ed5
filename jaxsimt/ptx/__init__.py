"""PTX front end: parse the PTX that nvcc emits into a typed AST (`ast`), lower an entry onto a `Program`
(`lower`) and run it (`launch`)."""
from jaxsimt.ptx import ast
from jaxsimt.ptx.ast import (Addr, Bracket, Function, Imm, Instruction, Label, Module, NotPred, Param, ParamList,
                             Predicate, Reg, RegDecl, RegPair, Sink, SpecialReg, Sym, SymAddr, VarDecl, Vec)
from jaxsimt.ptx.errors import PtxError, PtxInvalidError, PtxSyntaxError, PtxUnsupportedError
from jaxsimt.ptx.opcodes import KNOWN_OPCODES, SUPPORTED_OPCODES, check_supported
from jaxsimt.ptx.parser import parse


def parse_file(path) -> Module:
    """Parse a .ptx file; error messages name the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse(f.read(), str(path))


from jaxsimt.ptx.lower import lower  # noqa: E402
from jaxsimt.ptx.run import launch, load_module  # noqa: E402

__all__ = [
    "parse", "parse_file", "check_supported", "lower", "launch", "load_module", "SUPPORTED_OPCODES",
    "KNOWN_OPCODES", "PtxError", "PtxInvalidError", "PtxSyntaxError", "PtxUnsupportedError", "ast", "Module", "Function", "Param",
    "RegDecl", "VarDecl", "Label", "Instruction", "Predicate", "Reg", "SpecialReg", "Imm", "Sym", "Vec", "Addr",
    "Bracket", "RegPair", "NotPred", "Sink", "ParamList", "SymAddr",
]

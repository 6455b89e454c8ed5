"""PTX front end: parse the PTX that nvcc emits into a typed AST (`ast`), and say what the emulator runs."""
from jaxsimt.ptx import ast
from jaxsimt.ptx.ast import (Addr, Bracket, Function, Imm, Instruction, Label, Module, NotPred, Param, ParamList,
                             Predicate, Reg, RegDecl, RegPair, Sink, SpecialReg, Sym, SymAddr, VarDecl, Vec)
from jaxsimt.ptx.errors import PtxError, PtxSyntaxError, PtxUnsupportedError
from jaxsimt.ptx.opcodes import KNOWN_OPCODES, SUPPORTED_OPCODES, check_supported
from jaxsimt.ptx.parser import parse


def parse_file(path) -> Module:
    """Parse a .ptx file; error messages name the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse(f.read(), str(path))


__all__ = [
    "parse", "parse_file", "check_supported", "SUPPORTED_OPCODES", "KNOWN_OPCODES", "PtxError",
    "PtxSyntaxError", "PtxUnsupportedError", "ast", "Module", "Function", "Param", "RegDecl", "VarDecl",
    "Label", "Instruction", "Predicate", "Reg", "SpecialReg", "Imm", "Sym", "Vec", "Addr", "Bracket",
    "RegPair", "NotPred", "Sink", "ParamList", "SymAddr",
]

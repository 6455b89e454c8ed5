"""Errors of the PTX front end: every failure to read or accept PTX is a PtxError (a ValueError)."""
from __future__ import annotations

from typing import Optional


class PtxError(ValueError):
    """Base class of the PTX front end's errors."""


class PtxSyntaxError(PtxError):
    """Text that is not PTX this parser reads. The message is `file:line: what: <source line>`."""

    def __init__(self, message: str, filename: str = "<ptx>", line: int = 0, text: str = ""):
        self.filename = filename
        self.line = line
        self.text = text
        self.message = message
        where = f"{filename}:{line}" if line else filename
        if len(text) > 160:
            text = text[:157] + "..."
        super().__init__(f"{where}: {message}" + (f": {text!r}" if text else ""))


class PtxInvalidError(PtxSyntaxError):
    """PTX that reads as PTX but that ptxas refuses: an operand count, kind, register class or width, a type
    suffix, a declaration. The message is `file:line: instruction: what was expected, what was given:
    <source line>`."""


class PtxUnsupportedError(PtxError):
    """Valid PTX that the emulator does not execute (an opcode, or a modifier of a supported opcode)."""

    def __init__(self, line: int, opcode: str, reason: str = "", filename: str = "<ptx>", text: str = ""):
        self.line = line
        self.opcode = opcode
        self.filename = filename
        self.text = text
        self.reason = reason or "instruction not supported by the emulator"
        super().__init__(f"{filename}:{line}: {self.reason}: {opcode}" + (f" in {text!r}" if text else ""))

"""What every `jaxsimt` command shares: its argument parser, its error handling and its checks of paths and sizes.

A user's mistake (a bad option, a missing or unreadable file, a kernel name that is not in the file, a kernel that is
not allowed on the architecture) prints one line, `jaxsimt CMD: error: ...`, on stderr and exits with status 2. A
fault of the emulated kernel (`SimtError`) prints its report and exits with 1. Anything else is a bug of jaxsimt:
the traceback, then one line asking to report it, status 1.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
from typing import Callable

from jaxsimt.errors import LaunchConfigError, SimtError, UsageError

# Exceptions that mean the user's input, not jaxsimt, is at fault.
USER_ERRORS: tuple = (UsageError, LaunchConfigError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
                      PermissionError)

REPORT = ("this is a bug in jaxsimt, not a mistake in your command: please report it with the command line and "
          "the traceback above")


def _user_error_types() -> tuple:
    from jaxsimt.ptx.errors import PtxError  # imported late: the PTX front end pulls in JAX

    return USER_ERRORS + (PtxError,)


def one_line(message: object) -> str:
    """An error message on one line (multi-line messages joined with '; ')."""
    lines = [s.strip() for s in str(message).splitlines() if s.strip()]
    return "; ".join(lines) if lines else type(message).__name__


def _describe(e: BaseException) -> str:
    msg = one_line(e)
    if isinstance(e, OSError) and e.filename is not None and str(e.filename) not in msg:
        msg = f"{e.filename}: {msg}"
    return msg


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's own line breaks and shows every option's default."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if (action.option_strings and "%(default)" not in text and "default" not in text
                and d not in (None, False, True, "", [], argparse.SUPPRESS)):
            shown = " ".join(map(str, d)) if isinstance(d, (list, tuple)) else str(d)
            text += f" (default: {shown.replace('%', '%%')})"
        return text

    def _split_lines(self, text, width):
        if "\n" in text:  # a help text laid out by hand (a table of choices) keeps its lines
            return text.splitlines()
        return super()._split_lines(text, width)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors (`jaxsimt CMD: error: ...`, raised as UsageError) and defaults in --help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def add_arch(p: argparse.ArgumentParser, default: str = "h200", help: str = "architecture") -> None:  # noqa: A002
    """--arch with its choices and default; any letter case is accepted."""
    from jaxsimt.arch import ARCHS

    p.add_argument("--arch", default=default, type=str.lower, choices=list(ARCHS), metavar="ARCH",
                   help=f"{help}: one of {', '.join(ARCHS)}")


def command(name: str) -> Callable:
    """Decorate a command's `main(argv) -> int` so that it returns an exit status whatever happens (never raises
    SystemExit), after printing one line for a user's mistake or a traceback for a bug. A leading `name` in argv
    is skipped (the functions are also called with the whole command line)."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def main(argv=None) -> int:
            argv = list(sys.argv[1:] if argv is None else argv)
            if argv and argv[0] == name:
                argv = argv[1:]
            try:
                return int(fn(argv) or 0)
            except BrokenPipeError:  # the output piped into a command that stopped reading (| head)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                return 1
            except SystemExit as e:  # --help, --version
                return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            except SimtError as e:
                print(f"jaxsimt {name}: error: the kernel faulted: {e}", file=sys.stderr)
                return 1
            except KeyboardInterrupt:
                print(f"jaxsimt {name}: interrupted", file=sys.stderr)
                return 130
            except Exception as e:  # noqa: BLE001 - the boundary between the user and jaxsimt
                if isinstance(e, _user_error_types()):
                    print(f"jaxsimt {name}: error: {_describe(e)}", file=sys.stderr)
                    return 2
                traceback.print_exc()
                print(f"jaxsimt {name}: internal error: {REPORT}", file=sys.stderr)
                return 1

        return main

    return wrap


def check_output_file(path: str, what: str) -> None:
    """Refuse, before any work, an output file that cannot be written: a folder, a missing or read-only folder."""
    if os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is a folder; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{what} {path!r}: the folder {parent!r} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{what} {path!r} is not writable")


def check_output_dir(path: str, what: str) -> None:
    """Refuse, before any work, an output folder that is a file or cannot be created or written."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is a file, not a folder")
    probe = path
    while not os.path.exists(probe):  # the nearest existing ancestor must be a writable folder
        up = os.path.dirname(os.path.abspath(probe))
        if up == os.path.abspath(probe):
            break
        probe = up
    if not os.path.isdir(probe):
        raise UsageError(f"{what} {path!r}: {probe!r} is a file, not a folder")
    if not os.access(probe, os.W_OK):
        raise UsageError(f"{what} {path!r} is not writable")


def check_input_file(path: str, what: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"{what} {path!r} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{what} {path!r} is not readable")


def memory_budget() -> int:
    """Bytes the arrays of one command-line launch may take: half of this machine's memory (the emulator needs
    more than the arrays themselves: global memory is one image, copied in and out of the device)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return max(int(total) // 2, 1 << 20)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"

"""C++ entry names as a person reads them: `_Z8div_nonePKjPjii` -> `div_none(unsigned int const*, unsigned int*, int,
int)`.

`demangle_all` asks `c++filt` when it is on PATH (it knows the whole Itanium ABI) and otherwise falls back on
`demangle`, a small demangler for what nvcc emits for kernels: plain and namespaced functions, function templates,
builtin types, pointers, references, const/volatile, classes, template arguments (types and integer literals) and
substitutions. A name it cannot read stays mangled (it returns None)."""
from __future__ import annotations

import shutil
import subprocess
from typing import Optional, Sequence

_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char", "s": "short",
    "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long", "m": "unsigned long", "x": "long long",
    "y": "unsigned long long", "n": "__int128", "o": "unsigned __int128", "f": "float", "d": "double",
    "e": "long double", "g": "__float128", "z": "...", "Dh": "half", "Dn": "decltype(nullptr)",
}
_STD = {"St": "std", "Sa": "std::allocator", "Sb": "std::basic_string", "Ss": "std::string"}


class _Fail(Exception):
    pass


class _Demangler:
    def __init__(self, s: str):
        self.s, self.i = s, 0
        self.subs: list[str] = []
        self.tparams: list[str] = []

    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def take(self, n: int = 1) -> str:
        if self.i + n > len(self.s):
            raise _Fail
        t = self.s[self.i:self.i + n]
        self.i += n
        return t

    def number(self) -> int:
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if j == self.i:
            raise _Fail
        return int(self.s[j:self.i])

    def source_name(self) -> str:
        n = self.number()
        name = self.take(n)
        return "(anonymous namespace)" if name.startswith("_GLOBAL__N") else name

    def seq_id(self) -> int:
        # S_ is the first substitution, S0_ the second, S1_ the third ... (base 36)
        if self.peek() == "_":
            self.take()
            return 0
        j = self.i
        while self.peek() and self.peek() != "_":
            self.i += 1
        v = int(self.s[j:self.i], 36)
        self.take()
        return v + 1

    def substitution(self) -> str:
        self.take()  # S
        two = "S" + self.peek()
        if two in _STD:
            self.take()
            return _STD[two]
        k = self.seq_id()
        if k >= len(self.subs):
            raise _Fail
        return self.subs[k]

    def template_param(self) -> str:
        self.take()  # T
        k = self.seq_id()
        if k >= len(self.tparams):
            raise _Fail
        return self.tparams[k]

    def template_args(self) -> list[str]:
        self.take()  # I
        args = []
        while self.peek() != "E":
            if not self.peek():
                raise _Fail
            if self.peek() == "L":
                args.append(self.literal())
            else:
                args.append(self.type())
        self.take()
        return args

    def literal(self) -> str:
        self.take()  # L
        t = self.type()
        neg = self.peek() == "n"
        if neg:
            self.take()
        v = self.number()
        self.take() if self.peek() == "E" else (_ for _ in ()).throw(_Fail())
        if t == "bool":
            return "true" if v else "false"
        suffix = {"unsigned int": "u", "long": "l", "unsigned long": "ul", "long long": "ll",
                  "unsigned long long": "ull"}.get(t, "")
        text = f"{'-' if neg else ''}{v}{suffix}"
        return text if t in ("int",) or suffix else f"({t}){text}"

    @staticmethod
    def targs(args: Sequence[str]) -> str:
        s = ", ".join(args)
        return f"<{s}{' ' if s.endswith('>') else ''}>"

    def unqualified(self) -> str:
        c = self.peek()
        if c.isdigit():
            return self.source_name()
        if c == "C" and self.peek(2)[1:] in "123":
            self.take(2)
            return "{ctor}"
        if c == "D" and self.peek(2)[1:] in "012":
            self.take(2)
            return "{dtor}"
        raise _Fail

    def nested_name(self) -> tuple[str, bool]:
        """N ... E; returns (qualified name, whether it ends with template arguments)."""
        self.take()  # N
        while self.peek() in ("K", "V", "r"):
            self.take()
        parts: list[str] = []
        templated = False
        while self.peek() != "E":
            if not self.peek():
                raise _Fail
            if self.peek() == "S":
                parts = [self.substitution()]
                templated = False
                continue
            if self.peek() == "I":
                if not parts:
                    raise _Fail
                self.tparams = args = self.template_args()
                parts[-1] += self.targs(args)
                templated = True
            else:
                u = self.unqualified()
                last = parts[-1].split("<")[0].split("::")[-1] if parts else ""
                parts.append(last if u == "{ctor}" else "~" + last if u == "{dtor}" else u)
                templated = False
            if self.peek() != "E":
                self.subs.append("::".join(parts))
        self.take()
        return "::".join(parts), templated

    def name(self) -> tuple[str, bool]:
        c = self.peek()
        if c == "N":
            return self.nested_name()
        if c == "S":
            base = self.substitution()
            if self.peek() == "I":
                self.tparams = args = self.template_args()
                return base + self.targs(args), True
            return base + "::" + self.unqualified() if base in _STD.values() else base, False
        if c == "Z":
            raise _Fail  # local names: rare in kernels
        n = self.unqualified()
        if self.peek() == "I":
            self.subs.append(n)
            self.tparams = args = self.template_args()
            return n + self.targs(args), True
        return n, False

    def type(self) -> str:
        c = self.peek()
        if c in _BUILTIN:
            self.take()
            return _BUILTIN[c]
        if self.peek(2) in _BUILTIN:
            return _BUILTIN[self.take(2)]
        if c in "PROKV":
            self.take()
            inner = self.type()
            if inner.endswith("]"):
                raise _Fail  # pointers to arrays, `float (*) [4]`: rare in kernels
            t = {"P": inner + "*", "R": inner + "&", "O": inner + "&&", "K": inner + " const",
                 "V": inner + " volatile"}[c]
            self.subs.append(t)
            return t
        if c == "r":
            self.take()
            return self.type() + " restrict"
        if c == "S":
            two = self.peek(2)
            t = self.substitution()
            if two == "St" and not self.peek().isdigit():
                raise _Fail
            if two in _STD and self.peek().isdigit():
                t = t + "::" + self.source_name()
                self.subs.append(t)
            if self.peek() == "I":
                t += self.targs(self.template_args())
                self.subs.append(t)
            return t
        if c == "T":
            t = self.template_param()
            self.subs.append(t)
            return t
        if c == "N" or c.isdigit():
            t, _ = self.name()
            if not c == "N":
                self.subs.append(t) if not self.subs or self.subs[-1] != t else None
            return t
        if c == "A":
            self.take()
            n = self.number()
            self.take() if self.peek() == "_" else (_ for _ in ()).throw(_Fail())
            t = f"{self.type()} [{n}]"
            self.subs.append(t)
            return t
        raise _Fail

    def encoding(self) -> str:
        if self.take(2) != "_Z":
            raise _Fail
        name, templated = self.name()
        ret = self.type() + " " if templated else ""
        params = []
        while self.i < len(self.s) and self.peek() != ".":
            params.append(self.type())
        if params == ["void"]:
            params = []
        return f"{ret}{name}({', '.join(params)})"


def demangle(name: str) -> Optional[str]:
    """The demangled form of an Itanium C++ name (this module's own demangler), or None where it cannot read it
    (a plain C name, or a construct it does not know)."""
    if not name.startswith("_Z"):
        return None
    try:
        return _Demangler(name).encoding()
    except (_Fail, ValueError, IndexError):
        return None


def _cxxfilt(names: Sequence[str]) -> Optional[list]:
    exe = shutil.which("c++filt")
    if exe is None:
        return None
    try:
        p = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    out = p.stdout.splitlines()
    if p.returncode != 0 or len(out) != len(names):
        return None
    return [o if o != n else None for o, n in zip(out, names)]


def demangle_all(names: Sequence[str], use_cxxfilt: bool = True) -> list:
    """Demangled names (None where a name is not mangled or cannot be read), by `c++filt` when on PATH."""
    names = list(names)
    got = _cxxfilt(names) if use_cxxfilt and names else None
    if got is None:
        got = [demangle(n) for n in names]
    return got


def _head(demangled: str) -> str:
    """The name with template arguments: what precedes the parameter list, less a template's return type."""
    depth, last_space = 0, -1
    for k, ch in enumerate(demangled):
        if ch in "<(" and not (ch == "(" and depth == 0 and demangled[k:k + 20] != "(anonymous namespace"):
            depth += 1
        elif ch == "(" and depth == 0:
            return demangled[last_space + 1:k]
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0:
            last_space = k
    return demangled[last_space + 1:]


def template_name(demangled: str) -> str:
    """`void glob_load<float, PStride>(float*, float*, int)` -> `glob_load<float, PStride>`."""
    return _head(demangled)


def base_name(demangled: str) -> str:
    """`void glob_load<float, PStride>(float*, float*, int)` -> `glob_load`; `ns::f(int)` -> `ns::f`."""
    depth, out = 0, []
    for ch in _head(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def parameter_types(demangled: str) -> list[str]:
    """The C++ parameter types of a demangled function signature, split at top-level commas."""
    depth, start = 0, None
    for k, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            start = k
            break
    if start is None or not demangled.endswith(")"):
        return []
    inner = demangled[start + 1:-1]
    out, depth, cur = [], 0, []
    for ch in inner:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out

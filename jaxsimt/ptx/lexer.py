"""PTX tokenizer: one linear regular expression, one pass, tokens as parallel lists.

Kinds: "id" (identifiers, dotted instruction names, %registers), "dir" (.directive or .type words), "int",
"hexf" (0f/0d hex float), "flt" (decimal float), "str", "p" (punctuation), "eof".
"""
from __future__ import annotations

import re

from jaxsimt.ptx.errors import PtxSyntaxError

_TOKEN = re.compile(r"""
  (?P<ws>[ \t\r\f\v]+)
| (?P<nl>\n)
| (?P<lc>//[^\n]*)
| (?P<bc>/\*(?:[^*]|\*(?!/))*\*/)
| (?P<ubc>/\*)
| (?P<str>"(?:[^"\\\n]|\\.)*")
| (?P<hexf>(?:0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16})(?![\w$]))
| (?P<flt>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w$.])|\d+[eE][+-]?\d+(?![\w$]))
| (?P<int>(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)U?(?![\w$]))
| (?P<dir>\.[A-Za-z_][\w$]*(?:::[\w$]+)*)
| (?P<id>[A-Za-z_$%][\w$]*(?:::[\w$]+)*(?:\.[\w$]+(?:::[\w$]+)*)*)
| (?P<p><<|>>|&&|\|\||==|!=|<=|>=|[;,{}\[\]()<>@!|+\-*/%~&^=:?])
""", re.VERBOSE | re.ASCII)


class Tokens:
    """Parallel lists: kind[i], text[i], line[i] (1-based), pos[i] (character offset); last token is eof."""
    __slots__ = ("kind", "text", "line", "pos")

    def __init__(self):
        self.kind, self.text, self.line, self.pos = [], [], [], []


def tokenize(src: str, filename: str = "<ptx>") -> Tokens:
    toks = Tokens()
    kind, text, line, pos = toks.kind, toks.text, toks.line, toks.pos
    lineno = 1
    i, n = 0, len(src)
    match = _TOKEN.match
    while i < n:
        m = match(src, i)
        if m is None:
            bad = src[i]
            snippet = src[src.rfind("\n", 0, i) + 1: (src.find("\n", i) + 1 or n + 1) - 1].strip()
            if bad == '"':
                raise PtxSyntaxError("unterminated string", filename, lineno, snippet)
            raise PtxSyntaxError(f"unexpected character {bad!r}", filename, lineno, snippet)
        k = m.lastgroup
        j = m.end()
        if k == "ubc":
            raise PtxSyntaxError("unterminated /* comment", filename, lineno, src[i:i + 40].split("\n")[0])
        if k == "nl":
            lineno += 1
        elif k == "bc":
            lineno += src.count("\n", i, j)
        elif k not in ("ws", "lc"):
            kind.append(k)
            text.append(m.group())
            line.append(lineno)
            pos.append(i)
        i = j
    kind.append("eof")
    text.append("<end of file>")
    line.append(lineno)
    pos.append(n)
    return toks

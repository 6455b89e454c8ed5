"""The getting-started page runs as written: its Python code blocks, in order, in one namespace."""
from __future__ import annotations

import os
import re

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def python_blocks(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_getting_started_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = python_blocks(os.path.join(DOCS, "getting-started.md"))
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)  # the page writes its report into the working folder
    namespace: dict = {"__name__": "getting_started"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"getting-started.md block {i + 1}", "exec"), namespace)  # noqa: S102 - our own page
    assert "warp instructions" in capsys.readouterr().out
    page = (tmp_path / "saxpy.html").read_text(encoding="utf-8")
    assert "kernel saxpy" in page and 'id="memory"' in page


def test_every_page_is_in_the_site_nav():
    """mkdocs --strict builds the site in CI; a page left out of the nav would be built but unreachable."""
    with open(os.path.join(os.path.dirname(DOCS), "mkdocs.yml"), encoding="utf-8") as f:
        nav = f.read().split("nav:", 1)[1]
    pages = sorted(p for p in os.listdir(DOCS) if p.endswith(".md"))
    assert [p for p in pages if p not in nav] == []

"""The sanitizer corpus: planted-bug and clean kernels (CUDA sources, their PTX, DSL forms), their launches
and expected reports (`cases`), a runner on jaxsimt (`run`), and compute-sanitizer's verdicts on the H200
(`collect_h200.py`, `table.py`; docs/sanitizer.md)."""

"""Human-readable reports of launch results: the per-instruction memory table."""
from __future__ import annotations


def memory_table(result) -> str:
    """One line per global/shared memory instruction: source line, executions, requests, sectors,
    sectors per request, wavefronts, bank conflicts."""
    rows = [r for r in result.per_instruction if r["op"] in ("ld", "st", "atom")]
    head = (f"{'pc':>4} {'op':<5} {'space':<7} {'warps':>9} {'requests':>9} {'sectors':>9} {'sec/req':>7} "
            f"{'wavefr.':>9} {'conflicts':>9}  source")
    lines = [f"kernel {result.kernel} on {result.arch}", head, "-" * len(head)]
    for r in rows:
        spr = r.get("sectors", 0) / r["requests"] if r.get("requests") else 0.0
        lines.append(f"{r['pc']:>4} {r['op']:<5} {r.get('space', ''):<7} {r['warp_exec']:>9} {r.get('requests', 0):>9} "
                     f"{r.get('sectors', 0):>9} {spr:>7.2f} {r.get('wavefronts', 0):>9} {r.get('bank_conflicts', 0):>9}"
                     f"  {r['line']}: {r['source']}")
    return "\n".join(lines)

"""The results table (terminal and markdown), the JSON file and the scaling plot."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from harness import FAIL, ERROR, Result, fmt_seconds


def _config_text(cfg: dict) -> str:
    skip = {"device", "dtype", "optimizer", "model"}
    return ", ".join(f"{k}={v}" for k, v in cfg.items() if k not in skip and not isinstance(v, list))


def _time_cell(t: dict | None) -> str:
    if not t:
        return "-"
    cell = fmt_seconds(t["median_s"])
    return cell + (f" [{fmt_seconds(t['min_s'])}, {fmt_seconds(t['max_s'])}]" if t["reps"] > 1 else "")


def table_rows(results: list[Result]) -> list[list[str]]:
    """One list of cells per result: item, comparison, config, ours, baseline, ratio, target, status."""
    rows = []
    for r in results:
        ours, base = (_time_cell(r.timings.get(side)) for side in ("ours", "baseline"))
        ratio = "-" if r.ratio is None else f"{r.ratio:.3g}"
        target = "-" if r.target is None else f"<= {r.target:.3g}"
        rows.append([str(r.item), f"{r.ours} vs {r.baseline}", _config_text(r.config), ours, base,
                     ratio, target, r.status])
    return rows


HEADER = ["#", "comparison (ours vs baseline)", "config", "ours: median [min, max]",
          "baseline: median [min, max]", "ratio ours/baseline", "target", "status"]


def text_table(results: list[Result]) -> str:
    """A plain-text table for the terminal, with each row's note underneath it."""
    rows = table_rows(results)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(HEADER)]
    # The comparison and config columns would make every line wrap; they are printed as a
    # heading line per row instead.
    short = [0, 3, 4, 5, 6, 7]
    line = lambda cells: "  ".join(cells[i].ljust(widths[i]) for i in short)  # noqa: E731
    out = [line(HEADER), line(["-" * w for w in widths])]
    for r, cells in zip(results, rows):
        out.append(f"{r.item}. {cells[1]}  ({cells[2]})")
        out.append(line(cells))
        if r.note:
            out.append(f"   {r.note}")
    return "\n".join(out)


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown_table(results: list[Result], env: dict) -> str:
    """The markdown table with a line stating machine, threads, versions and load."""
    v = env["versions"]
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version') or ''} ({b.get('architecture', '-')}, "
                     f"{b.get('num_threads')} threads)" for b in env.get("blas", []) if b.get("user_api") == "blas")
    head = (f"Machine `{env['machine']}` ({env['cpu_count']} cores{', ' + env['gpu'] if env['gpu'] else ''}), "
            f"torch {v['torch']} with {env['torch_threads']} threads, NumPy {v['numpy']}"
            f"{' (' + blas + ')' if blas else ''}, transformers {v.get('transformers')}; "
            f"load average {env['loadavg_start'][0]:.1f} at start, {env.get('loadavg_end', [float('nan')])[0]:.1f} "
            f"at end; {env['mode']} mode, {env['date']}. Ratio = median over repetitions of "
            "t_ours / t_baseline (both timed back to back in each repetition, after warm-up); below "
            "the target passes.\n\n")
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    for r, cells in zip(results, table_rows(results)):
        cells = list(cells)
        if r.note:
            cells[1] += f" ({r.note})"
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return head + "\n".join(lines) + "\n"


def summary_markdown(results: list[Result], env: dict) -> str:
    """The short table for the README: comparison, size, ratio, target, status."""
    lines = [f"Measured on `{env['machine']}`, {env['torch_threads']} threads, torch {env['versions']['torch']}, "
             f"load average {env['loadavg_start'][0]:.1f}; ratio = time ours / time baseline "
             "(median of paired repetitions).\n",
             "| # | ours vs baseline | size | ratio | target | |", "|---|---|---|---|---|---|"]
    for r, cells in zip(results, table_rows(results)):
        lines.append("| " + " | ".join(_md_cell(c) for c in (cells[0], cells[1], cells[2], cells[5], cells[6],
                                                              cells[7])) + " |")
    return "\n".join(lines) + "\n"


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: Path, results: list[Result], env: dict) -> None:
    payload = {"environment": env, "results": [r.to_dict() for r in results]}
    atomic_write(path, (json.dumps(payload, indent=1, default=str) + "\n").encode())


def scaling_plot(path: Path, row: Result) -> None:
    """Log-log seconds per matrix against n, one line per method, fitted slopes in the legend."""
    import matplotlib
    matplotlib.use("Agg")
    import io

    import matplotlib.pyplot as plt

    from lowrank.plotting import grey_safe_lines, subplots, use_style

    use_style()
    points, slopes = row.extra["points"], row.extra["slopes"]
    methods = list(slopes)
    fig, axes = subplots(width=6.5, height=3.8)
    ax = axes[0, 0]
    for method, style in zip(methods, grey_safe_lines(len(methods))):
        pts = sorted((p for p in points if p["method"] == method), key=lambda p: p["n"])
        ns = [p["n"] for p in pts]
        med = [p["seconds_per_matrix"] for p in pts]
        lo = [p["seconds_per_matrix"] - p["min_s"] for p in pts]
        hi = [p["max_s"] - p["seconds_per_matrix"] for p in pts]
        ax.errorbar(ns, med, yerr=[lo, hi], capsize=3,
                    label=f"{method}: slope {slopes[method]:.2f}", **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix size $n$ (float64, $n \\times n$)")
    ax.set_ylabel("seconds per matrix (median)")
    ax.set_title(f"Rank analysis cost against $n$; slopes fitted for $n \\geq {row.extra['slope_from_n']}$")
    ax.legend(loc="upper left")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, metadata={"Software": None})
    plt.close(fig)
    atomic_write(path, buf.getvalue())


def failed(results: list[Result]) -> list[Result]:
    """Rows that make --check exit non-zero: a missed target or a failed correctness check."""
    return [r for r in results if r.status in (FAIL, ERROR)]

"""The results table (terminal and markdown), the JSON file and the scaling plot."""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from harness import FAIL, ERROR, Result, fmt_seconds


_SHORT = {"batch": "B", "d_model": "d", "n_heads": "h", "heads": "h", "head_dim": "d_h",
          "fixed_head_dim": "d_p", "layers": "L", "vocab": "V"}
_SKIP = {"device", "dtype", "optimizer", "model"}


def _config_text(cfg: dict) -> str:
    return ", ".join(f"{_SHORT.get(k, k)}={v}" for k, v in cfg.items()
                     if k not in _SKIP and not isinstance(v, list))


def _time_cell(t: dict | None) -> str:
    if not t:
        return "-"
    cell = fmt_seconds(t["median_s"])
    return cell + (f" [{fmt_seconds(t['min_s'])}, {fmt_seconds(t['max_s'])}]" if t["reps"] > 1 else "")


def row_ids(results: list[Result]) -> list[str]:
    """1a, 1b, 2a, 3a, ...: the item number and the row's letter within its item."""
    ids, seen = [], {}
    for r in results:
        k = seen.get(r.item, 0)
        seen[r.item] = k + 1
        ids.append(f"{r.item}{chr(ord('a') + k)}")
    return ids


def table_rows(results: list[Result]) -> list[list[str]]:
    """One list of cells per result: id, comparison, size, ours, baseline, ratio, target, status."""
    rows = []
    for rid, r in zip(row_ids(results), results):
        ours, base = (_time_cell(r.timings.get(side)) for side in ("ours", "baseline"))
        ratio = "-" if r.ratio is None else f"{r.ratio:.3g}"
        target = "-" if r.target is None else f"<= {r.target:.3g}"
        rows.append([rid, f"{r.ours} vs {r.baseline}", _config_text(r.config), ours, base,
                     ratio, target, r.status])
    return rows


HEADER = ["#", "ours vs baseline", "size", "ours: median [min, max]", "baseline: median [min, max]",
          "ratio", "target", "status"]


def text_table(results: list[Result]) -> str:
    """A plain-text table for the terminal, with each row's comparison above and note below it."""
    rows = table_rows(results)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(HEADER)]
    # The comparison and size columns would make every line wrap; they head each row instead.
    short = [0, 3, 4, 5, 6, 7]

    def line(cells):
        return "  ".join(cells[i].ljust(widths[i]) for i in short)

    out = [line(HEADER), line(["-" * w for w in widths])]
    for r, cells in zip(results, rows):
        out.append(f"{cells[0]}. {cells[1]}  ({cells[2]})")
        out.append(line(cells))
        if r.note:
            out.append(f"    {r.note}")
    return "\n".join(out)


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows)]


def environment_line(env: dict) -> str:
    """One sentence: machine, threads, library versions, BLAS, load, mode and date."""
    v = env["versions"]
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version') or ''} ({b.get('architecture', '-')}, "
                     f"{b.get('num_threads')} threads)" for b in env.get("blas", [])
                     if b.get("user_api") == "blas")
    gpu = f", {env['gpu']}" if env.get("gpu") else ""
    end = env.get("loadavg_end", [float("nan")])[0]
    earlier = "".join(
        f" {'Items' if len(run['items']) > 1 else 'Item'} {', '.join(map(str, run['items']))} "
        f"{'are' if len(run['items']) > 1 else 'is'} from the run of {run['date']} on `{run.get('machine')}` "
        f"(commit {run.get('git_commit') or '-'}, {run.get('torch_threads')} threads, load average "
        f"{(run.get('loadavg_start') or [math.nan])[0]:.1f} at start, "
        f"{(run.get('loadavg_end') or [math.nan])[0]:.1f} at end)."
        for run in env.get("earlier_runs", []))
    return (f"Machine `{env['machine']}` ({env['cpu_count']} cores{gpu}), torch {v['torch']} with "
            f"{env['torch_threads']} threads, NumPy {v['numpy']}{' (' + blas + ')' if blas else ''}, "
            f"transformers {v.get('transformers')}; load average {env['loadavg_start'][0]:.1f} at start, "
            f"{end:.1f} at end; {env['mode']} mode, {env['date']}.{earlier}")


def summary_markdown(results: list[Result], env: dict) -> str:
    """The short table (README): row, comparison, size, ratio, target, status."""
    rows = [[c[0], c[1], c[2], c[5], c[6], c[7]] for c in table_rows(results)]
    head = (environment_line(env) + " Ratio = time ours / time baseline, the median over repetitions "
            "that time both back to back; at or below the target passes.\n\n")
    return head + "\n".join(_md_table(["#", "ours vs baseline", "size", "ratio", "target", "status"], rows)) + "\n"


def markdown_table(results: list[Result], env: dict) -> str:
    """The book's results: the short table, each row's note, then every row's timings."""
    cells = table_rows(results)
    notes = [f"- **{c[0]}** {r.note}" for r, c in zip(results, cells) if r.note]
    timings = [[c[0], c[2], c[3], c[4], str(r.timings["ours"]["reps"]) if r.timings.get("ours") else "-"]
               for r, c in zip(results, cells)]
    return (summary_markdown(results, env) + "\n" + "\n".join(notes) + "\n\nTimings (seconds per call):\n\n"
            + "\n".join(_md_table(["#", "size", "ours: median [min, max]", "baseline: median [min, max]",
                                    "repetitions"], timings)) + "\n")


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; results are for every reader
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: Path, results: list[Result], env: dict) -> None:
    payload = {"environment": env, "results": [r.to_dict() for r in results]}
    atomic_write(path, (json.dumps(payload, indent=1, default=str) + "\n").encode())


# What a results file records of the run its rows come from, kept when its rows are merged.
RUN_KEYS = ("machine", "date", "command", "git_commit", "torch_threads", "loadavg_start", "loadavg_end",
            "wall_s", "settings")


def merge_previous(path: Path, results: list[Result], env: dict, items) -> tuple[list[Result], dict]:
    """(rows, environment) of this run merged with ``path``: its rows whose items were not
    measured now (``items``) are kept, in item order, and the returned environment's
    ``earlier_runs`` names the run (machine, date, commit, load) each kept row comes from."""
    if not items or not path.is_file():
        return results, env
    try:
        data = json.loads(path.read_text())
        old, old_env = [Result(**r) for r in data["results"]], data["environment"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"previous results {path} cannot be read ({e}); writing this run's rows only", file=sys.stderr)
        return results, env
    kept = [r for r in old if r.item not in items]
    runs = [dict(run, items=[i for i in run["items"] if i not in items])
            for run in old_env.get("earlier_runs", [])]
    own = sorted({r.item for r in kept} - {i for run in runs for i in run["items"]})
    if own:
        runs.append({"items": own, **{k: old_env.get(k) for k in RUN_KEYS}})
    runs = sorted((run for run in runs if run["items"]), key=lambda run: run["items"][0])
    merged = sorted(kept + results, key=lambda r: r.item)  # sorted is stable: rows keep their order
    return merged, ({**env, "earlier_runs": runs} if runs else env)


def scaling_plot(path: Path, row: Result) -> None:
    """Log-log seconds per matrix against n, one line per method, fitted slopes in the legend; drawn
    4.2 in wide with no text under 10 pt so that it reads on a phone, its measures in the PNG."""
    import matplotlib
    matplotlib.use("Agg")

    import matplotlib.pyplot as plt

    from lowrank.book.plotting import grey_safe_lines, legend_below, subplots, use_style
    from lowrank.core.figure_measures import phone_fonts, save_png

    use_style()
    points, slopes = row.extra["points"], row.extra["slopes"]
    methods = list(slopes)
    with plt.rc_context(phone_fonts(10)):
        fig, axes = subplots(width=4.2, height=3.6)
        ax = axes[0, 0]
        for method, style in zip(methods, grey_safe_lines(len(methods))):
            pts = sorted((p for p in points if p["method"] == method), key=lambda p: p["n"])
            ns = [p["n"] for p in pts]
            med = [p["seconds_per_matrix"] for p in pts]
            lo = [p["seconds_per_matrix"] - p["min_s"] for p in pts]
            hi = [p["max_s"] - p["seconds_per_matrix"] for p in pts]
            ax.errorbar(ns, med, yerr=[lo, hi], capsize=3, label=f"{method}: slope {slopes[method]:.2f}", **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("matrix size $n$ (float64, $n \\times n$)")
        ax.set_ylabel("seconds per matrix (median)")
        ax.set_title(f"Slopes fitted for $n \\geq {row.extra['slope_from_n']}$")
        # Below the axes: inside, the legend covers the small sizes of one line or the large of the other.
        legend_below(ax, frameon=False)
        save_png(fig, path)
        plt.close(fig)


def failed(results: list[Result]) -> list[Result]:
    """Rows that make --check exit non-zero: a missed target or a failed correctness check."""
    return [r for r in results if r.status in (FAIL, ERROR)]

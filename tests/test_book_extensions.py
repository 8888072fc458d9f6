"""The book's Sphinx extensions in _ext/: re-run box (scales, parameters), execution records, the offline
MathJax check, the layout safety nets (book_ui) and the source archive."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from docutils import nodes
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import book_ui  # noqa: E402
import execution_report  # noqa: E402
import offline_assets  # noqa: E402
import rerun_box  # noqa: E402
import source_archive  # noqa: E402
from sphinx.errors import ConfigError, ExtensionError  # noqa: E402

PARAMETERS = '''seed = 0  # random seed
ns = [32,
      64]  # sequence lengths n
rtols = [0.0, 1e-3]  # tolerances (0 = default max(m, n) * eps)
label: str = "x"  # an annotated one
'''


def _chapter(folder: Path, source: str = PARAMETERS, *, metadata: dict | None = None, outputs=()) -> Path:
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nb = new_notebook(metadata={**kernel, **(metadata or {})})
    nb.cells = [new_markdown_cell("# Title\n\n**Summary.**"),
                new_code_cell(source, metadata={"tags": ["parameters"]}),
                new_code_cell("x = 1", outputs=list(outputs))]
    path = folder / "chapters" / "07_test_chapter.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_chapter_parameters_reads_every_assignment_with_default_and_comment(tmp_path):
    params = rerun_box.chapter_parameters(_chapter(tmp_path))
    assert list(params) == ["seed", "ns", "rtols", "label"]
    assert params["seed"] == {"default": "0", "help": "random seed"}
    assert params["ns"]["default"] == "[32,\n      64]"
    assert params["ns"]["help"] == "sequence lengths n"
    assert params["rtols"]["help"] == "tolerances (0 = default max(m, n) * eps)"
    assert params["label"] == {"default": '"x"', "help": "an annotated one"}


def test_papermill_blind_spots_names_the_lines_papermill_skips(tmp_path):
    path = _chapter(tmp_path)
    assert rerun_box.papermill_blind_spots(path, list(rerun_box.chapter_parameters(path))) == ["rtols"]


def test_notebook_without_parameters_cell_is_refused(tmp_path):
    path = _chapter(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].metadata["tags"] = []
    nbformat.write(nb, path)
    with pytest.raises(ExtensionError, match="0 code cells tagged 'parameters'"):
        rerun_box.chapter_parameters(path)


_META = ("metadata:\n  hardware: one CUDA GPU\n  devices: cuda\n  memory: 1 GiB\n  measured:\n"
         "    source: none\n")


def test_rerun_box_gives_commands_sets_and_one_row_per_parameter(tmp_path):
    path = _chapter(tmp_path)
    for scale in ("paper", "smoke"):
        (path.parent / "params" / scale).mkdir(parents=True)
        (path.parent / "params" / scale / "07_test_chapter.yaml").write_text("seed: 1\n" + _META)
    assert rerun_box.parameter_sets(path) == ["smoke", "paper"]
    box = rerun_box.rerun_box(path, tmp_path)
    text = box.astext()
    assert "lowrank run 07 -p seed 1" in text
    assert "lowrank run 07 --scale smoke" in text and "lowrank run 07 --scale paper" in text
    assert "make setup" in text and "make test" not in text
    assert "as in the paper" not in text
    assert ("papermill chapters/07_test_chapter.ipynb out.ipynb \\\n    --cwd chapters -k python3 "
            "-f chapters/params/paper/07_test_chapter.yaml") in text
    params_table = [t for t in box.findall(nodes.table) if "rerun-chapter-parameters" in t["classes"]]
    assert len(list(params_table[0].findall(nodes.row))) == 1 + 4  # header + parameters
    scales = [t for t in box.findall(nodes.table) if "rerun-chapter-scales" in t["classes"]][0]
    scale_rows = [r.astext() for r in scales.findall(nodes.row)][1:]
    assert [r.split(":")[0].split("\n")[0] for r in scale_rows] == ["smoke", "default", "paper"]
    assert "not yet run" in scale_rows[2] and "One CUDA GPU" in scale_rows[2]
    assert any(isinstance(n, source_archive.source_archive_ref) for n in box.findall())


def test_a_set_without_its_metadata_block_stops_the_build(tmp_path):
    path = _chapter(tmp_path)
    (path.parent / "params" / "paper").mkdir(parents=True)
    (path.parent / "params" / "paper" / "07_test_chapter.yaml").write_text("# Hardware: one GPU.\nseed: 1\n")
    with pytest.raises(ExtensionError, match="metadata block missing"):
        rerun_box.rerun_box(path, tmp_path)


@pytest.mark.parametrize("chapter, scale, hardware, time", [
    ("04_head_size_training", "long", "One CPU core", "measured: 1 h"),
    ("07_trained_attention", "long", "One CPU core", "data/results/07_trained_attention_long.jsonl"),
    ("04_head_size_training", "paper", "One CUDA GPU", "not yet run; estimated about"),
    ("06_rank_saturation", "default", "A CPU", "the notebook's execution record"),
])
def test_scale_needs_reads_the_metadata_and_the_measured_time(chapter, scale, hardware, time):
    got_hardware, got_time = rerun_box.scale_needs(ROOT / "chapters" / f"{chapter}.ipynb", scale)
    assert got_hardware.startswith(hardware) and time in got_time and "estimated about" in got_time
    assert rerun_box.differs_from_paper(ROOT / "chapters" / "04_head_size_training.ipynb")
    assert not rerun_box.differs_from_paper(ROOT / "chapters" / "05_rank_barrier.ipynb")


def test_book_ui_hides_check_cells_and_stderr_and_unfixes_image_heights():
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    doc = new_document("test", get_default_settings(Parser))

    def cell(source, *outputs):
        c = nodes.container(nb_element="cell_code")
        src = nodes.container(nb_element="cell_code_source")
        src += nodes.literal_block(source, source)
        c += src
        out = nodes.container(nb_element="cell_code_output")
        for o in outputs:
            out += o
        c += out
        return c

    doc += cell("# NBVAL_CHECK_OUTPUT\nprint(x)", nodes.literal_block("True", "True"))
    doc += cell("# NBVAL_IGNORE_OUTPUT\ny = 2", nodes.literal_block("warn", "warn", classes=["output", "stderr"]))
    figure = nodes.figure()
    figure += nodes.image(uri="_images/" + "a" * 64 + ".png", width="892", height="430")
    figure += nodes.caption("", "The rank of A against n.")
    doc += figure
    assert book_ui.hide_test_machinery(doc) == 1
    assert "NBVAL" not in doc.astext() and "print(x)" not in doc.astext() and "warn" not in doc.astext()
    assert "y = 2" in doc.astext()
    book_ui.keep_aspect_ratio(doc)
    [image] = doc.findall(nodes.image)
    assert "height" not in image and image["width"] == "892"
    assert image["alt"] == "The rank of A against n."


def test_source_archive_holds_the_project_at_a_commit(tmp_path):
    source = source_archive.find_source(ROOT)
    assert len(source.commit) == 40 and source.filename.startswith(f"lowrank-{source.commit[:12]}")
    import tarfile
    path = source_archive.write_archive(source, tmp_path)
    with tarfile.open(path) as tar:
        names = tar.getnames()
    prefix = path.name.removesuffix(".tar.gz")
    for needed in ("Makefile", "lowrank/measure/rank.py", "requirements/lock.txt", "_config.yml"):
        assert f"{prefix}/{needed}" in names, needed
    assert not any("/.venv/" in n or "/_build/" in n for n in names)


def test_committed_run_prefers_the_latest_record_and_spots_errors(tmp_path):
    meta = {"papermill": {"duration": 12.5, "end_time": "2026-01-01T10:00:00+00:00", "exception": None},
            "lowrank_execution": {"duration": 30.0, "end_time": "2026-01-02T10:00:00+00:00"}}
    run = execution_report.committed_run(_chapter(tmp_path, metadata=meta))
    assert run["method"] == "committed (make notebooks)"
    assert run["runtime"] == 30.0 and run["succeeded"] is True and run["error"] is None

    error = new_output("error", ename="ValueError", evalue="bad", traceback=[])
    run = execution_report.committed_run(_chapter(tmp_path, metadata={"papermill": meta["papermill"]},
                                                  outputs=[error]))
    assert run["method"] == "committed (papermill)" and run["runtime"] == 12.5
    assert run["succeeded"] is False and run["error"] == "ValueError"

    run = execution_report.committed_run(_chapter(tmp_path))
    assert run["method"] == "committed (not timed)" and run["runtime"] is None and run["succeeded"] is True


def test_mathjax_path_must_be_the_local_copy():
    offline_assets.check_mathjax_path(None, SimpleNamespace(mathjax_path="mathjax/tex-chtml.js"))
    for bad in ("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js", "mathjax/tex-svg.js"):
        with pytest.raises(ConfigError, match="serves MathJax from its own _static folder"):
            offline_assets.check_mathjax_path(None, SimpleNamespace(mathjax_path=bad))


def test_mathjax_package_has_every_part_the_book_copies():
    es5 = offline_assets.mathjax_es5()
    assert (es5 / "tex-chtml.js").read_text(encoding="utf8", errors="replace").count("3.2.2") > 0
    for part in offline_assets.MATHJAX_PARTS:
        assert (es5 / part).exists(), part
    assert len(list((es5 / "output/chtml/fonts/woff-v2").glob("*.woff"))) >= 20


def test_execution_records_of_the_committed_chapters_are_readable():
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        run = execution_report.committed_run(path)
        assert set(run) == {"mtime", "runtime", "method", "succeeded", "error", "traceback"}, path
        json.dumps(run)


def test_lowrank_book_stages_the_book_extensions(tmp_path):
    from lowrank.book import staging

    staging.stage_book(ROOT, tmp_path / "src")
    for name in ("offline_assets", "rerun_box", "execution_report", "book_ui", "source_archive"):
        assert (tmp_path / "src" / "_ext" / f"{name}.py").is_file(), name

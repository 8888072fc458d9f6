"""The package as a library: its dependency metadata, what importing it pulls in, the public API."""
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK_ONLY = ("papermill", "seaborn", "matplotlib", "jupyter-book", "nbformat", "pyyaml")
LIBRARY = ("layers.attention", "layers.mla", "measure.rank", "probes.probe", "probes.hf", "layers.models", "data.corpora",
           "tasks.fit", "train", "stores.sweep", "measure.stats")


def _name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name.lower()


def test_base_requirements_are_the_library_alone():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(r) for r in project["dependencies"]}
    assert "torch" in base and not base & set(BOOK_ONLY)
    extras = project["optional-dependencies"]
    assert set(BOOK_ONLY) <= {_name(r) for r in extras["book"]}
    assert project["license"] == "MIT AND CC-BY-4.0" and project["license-files"] == ["LICENSE"]


def test_hf_extra_pins_a_transformers_range_holding_the_tested_version():
    from packaging.requirements import Requirement

    transformers = pytest.importorskip("transformers")
    hf = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["hf"]
    spec = next(Requirement(r).specifier for r in hf if _name(r) == "transformers")
    assert spec, "the hf extra must bound transformers"
    assert transformers.__version__ in spec
    assert "4.57.0" not in spec and "6.0.0" not in spec


@pytest.mark.slow
def test_importing_the_library_loads_nothing_of_the_book():
    code = ("import sys, torch, lowrank; "
            + "; ".join(f"import lowrank.{m}" for m in LIBRARY)
            + "; r = lowrank.rank_report(torch.eye(4).expand(2, 4, 4), rtols=(None,), energies=()); "
            "assert list(r['numerical_rank[rtol=max(m,n)eps]']) == [4, 4], r; "
            f"print(sorted(m for m in {['papermill', 'seaborn', 'matplotlib', 'nbformat', 'yaml']!r} "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.slow
def test_the_wheel_carries_the_licence_and_library_metadata(tmp_path):
    """Built offline with the installed setuptools: what `pip install .` would install. The build
    runs in a copy, so its build/ and egg-info folders never land in the repository."""
    import shutil

    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "lowrank", src / "lowrank", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-q", "-w", str(tmp_path), str(src)], check=True, capture_output=True, cwd=tmp_path)
    wheel = next(tmp_path.glob("lowrank-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert {n.split("/")[0] for n in names if not n.startswith("lowrank-")} == {"lowrank"}
    required = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    base = {_name(r.split(";")[0]) for r in required if "extra ==" not in r}
    assert base and not base & set(BOOK_ONLY)
    assert "License-Expression: MIT AND CC-BY-4.0" in meta


def test_version_is_the_same_in_package_pyproject_changelog_and_book():
    import lowrank

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert lowrank.__version__ == version
    releases = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert [r for r in releases if r != "Unreleased"][0] == version
    assert f"version {version}" in (ROOT / "_config.yml").read_text()
    assert f"version {version}" in (ROOT / "intro.md").read_text()  # the BibTeX block
    for name in ("LICENSE", "CITATION.cff", "CONTRIBUTING.md"):
        assert (ROOT / name).is_file()
    assert f"version: {version}" in (ROOT / "CITATION.cff").read_text()

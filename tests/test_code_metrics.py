"""`scripts/code_metrics.py`: the size and shape numbers of a checkout, on a small tree the test
writes (each count has one file that should count and one that should not)."""

from __future__ import annotations

from scripts.code_metrics import main, measure


def _write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_counts_of_a_small_checkout(tmp_path, capsys):
    _write(tmp_path, "envpool/a.py", "import docker\n")
    _write(tmp_path, "envpool/b.py", "def f(client):\n    return client.images.get('x')\n")
    _write(tmp_path, "agents/c.py", "def f(x):\n    return x.images\n" + "# pad\n" * 398)
    _write(tmp_path, "agents/d.py", "class K:\n    def wide(self, a, b, c, d, e, f, g, h, *, i):\n        pass\n"
                                    "def narrow(a, b, c, d, e, f, g, h):\n    pass\n")
    _write(tmp_path, "pipeline/e.py", "x = 1\n")
    _write(tmp_path, "tests/test_x.py",
           "def test_patches(monkeypatch):\n"
           "    def inner():\n        monkeypatch.setattr(m, 'ensure_image', None)\n"
           "    monkeypatch.setattr('pkg.mod.layer_image', None)\n"
           "def test_other(monkeypatch):\n    monkeypatch.setattr(m, 'run', None)\n")
    got = measure(tmp_path)
    assert got["files"] == 5
    assert got["lines"] == 1 + 2 + 400 + 5 + 1
    assert got["median_lines"] == 2 and got["p90_lines"] == 400
    assert got["lists"]["files_ge_400"] == ["agents/c.py"]
    assert [w.rsplit(":", 1)[1] for w in got["lists"]["functions_gt_8_params"]] == ["wide(9)"]
    assert got["lists"]["docker_sdk_files"] == ["envpool/a.py", "envpool/b.py"]
    assert got["lists"]["tests_patching_images"] == ["tests/test_x.py:1:test_patches"]
    assert main([str(tmp_path)]) == 0
    assert "tests_patching_images" in capsys.readouterr().out


def test_no_test_of_this_checkout_monkeypatches_an_image_operation():
    """Issue 28's habit: tests reach images through the image-store seam (`envpool.fake_images`) or
    a fake Docker client, never by patching an image function by name (one slipped back in once)."""
    from pathlib import Path

    got = measure(Path(__file__).resolve().parents[1])
    assert got["lists"]["tests_patching_images"] == []

"""`scripts/name_clashes.py`: module basenames and public class names two files share, on a small
tree the test writes (each kind has one name that clashes and one that must not count), and
this checkout holding none (issue 28's "no two modules or classes sharing one")."""

from __future__ import annotations

from pathlib import Path

from scripts.name_clashes import clashes, main


def _write(root, rel, text=""):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_clashes_of_a_small_checkout(tmp_path, capsys):
    _write(tmp_path, "envpool/__init__.py")
    _write(tmp_path, "agents/__init__.py")                  # Python's own name: never a clash
    _write(tmp_path, "envpool/config.py", "class Options:\n    pass\nclass _Strict:\n    pass\n")
    _write(tmp_path, "pipeline/sub/config.py", "class Options:\n    pass\nclass _Strict:\n    pass\n")
    _write(tmp_path, "agents/models.py", "from envpool.config import Options\n"  # an import, not a definition
                                         "def f():\n    class Local:\n        pass\n")
    _write(tmp_path, "scripts/tool.py", "class Local:\n    pass\n")
    _write(tmp_path, "tests/config.py", "class Options:\n    pass\n")  # tests are not read
    got = clashes(tmp_path)
    assert got == {"modules": {"config.py": ["envpool/config.py", "pipeline/sub/config.py"]},
                   "classes": {"Options": ["envpool/config.py", "pipeline/sub/config.py"]}}
    assert main([str(tmp_path)]) == 1
    assert "config.py: envpool/config.py pipeline/sub/config.py" in capsys.readouterr().out


def test_no_clash_exits_zero(tmp_path):
    _write(tmp_path, "envpool/pool_config.py", "class PoolOptions:\n    pass\n")
    _write(tmp_path, "pipeline/crawl_config.py", "class CrawlOptions:\n    pass\n")
    assert clashes(tmp_path) == {"modules": {}, "classes": {}}
    assert main([str(tmp_path), "--json"]) == 0


def test_this_checkout_has_no_shared_module_or_class_name():
    got = clashes(Path(__file__).resolve().parents[1])
    assert got == {"modules": {}, "classes": {}}, got

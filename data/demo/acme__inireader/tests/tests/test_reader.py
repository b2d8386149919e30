import pytest

from inireader import Reader

DOC = """
[server]
port = 8080
debug = true
name = demo
"""


def test_get_string():
    assert Reader(DOC).get("server", "name") == "demo"


def test_missing_key_gives_default():
    assert Reader(DOC).get("server", "absent", "x") == "x"


def test_get_int():
    assert Reader(DOC).get_int("server", "port") == 8080


def test_get_bool_true():
    assert Reader(DOC).get_bool("server", "debug") is True


def test_get_bool_rejects_garbage():
    with pytest.raises(ValueError):
        Reader("[a]\nb = maybe\n").get_bool("a", "b")


@pytest.mark.parametrize("word, expected", [("yes", True), ("no", False)])
def test_get_bool_words(word, expected):
    assert Reader(f"[a]\nb = {word}\n").get_bool("a", "b") is expected

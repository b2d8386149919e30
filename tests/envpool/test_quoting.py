"""One encoder per format (issue 24, item 1): hostile values stay data in every format.

Each value below is one an instance file or a repository's output can carry: a newline followed
by a command, `..` and `/`, a NUL, shell metacharacters, ANSI and OSC escapes, 10 kB. Every case
runs the real consumer where there is one (bash, PyYAML, the HTML parser, matplotlib) and checks
that the value comes back as written, or is refused with a ValueError -- never a command or an
escape.
"""

from __future__ import annotations

import html.parser
import os
import re
import subprocess

import pytest
import yaml

from envpool import quoting
from envpool.quoting import (UnsafePath, ansi_c_quote, comment, docker_env_value, env_assignment, env_name, heredoc,
                             html_text, image_tag, label_value, markdown_cell, one_line, path_component, path_under,
                             plot_label, shell_word, terminal_text, yaml_text)

HOSTILE = [
    "a\ntouch PWNED",
    "a\r\ntouch PWNED",
    "../../x",
    "a/b",
    "x'; touch PWNED; echo '",
    "$(touch PWNED)",
    "`touch PWNED`",
    "a;touch PWNED&&b|c>d<e",
    "\x1b[31mred\x1b]52;c;aGk=\x07",
    "-rf",
    "*",
    "~",
    "\\",
    "\u2028line\u2029",
    "x" * 10_000,
]


def bash(script: str, cwd) -> subprocess.CompletedProcess:
    r = subprocess.run(["bash", "-c", script], capture_output=True, cwd=cwd, timeout=30)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode())


@pytest.mark.parametrize("value", HOSTILE)
def test_a_shell_word_is_one_literal_word(value, tmp_path):
    r = bash(f"printf '%s' {quoting.shell_word(value)}", tmp_path)
    assert r.returncode == 0 and r.stdout == value
    assert not (tmp_path / "PWNED").exists()


def test_a_nul_is_refused_by_every_shell_encoder():
    for fn in (shell_word, ansi_c_quote, lambda v: heredoc("/tmp/x", v, "T")):
        with pytest.raises(ValueError, match="NUL"):
            fn("a\0b")


@pytest.mark.parametrize("value", HOSTILE)
def test_ansi_c_quote_runs_a_script_exactly_as_written_on_one_line(value, tmp_path):
    word = ansi_c_quote(f"printf '%s' {shell_word(value)}")
    assert "\n" not in word and "\r" not in word
    r = bash(f"bash -c {word}", tmp_path)
    assert r.stdout == value and not (tmp_path / "PWNED").exists()


def test_a_heredoc_ends_only_at_its_own_delimiter_even_when_the_body_holds_it(tmp_path, monkeypatch):
    class Fixed:  # the digest an attacker would have to guess: here the body holds the first delimiter
        def __init__(self, *_):
            pass

        def hexdigest(self):
            return "0" * 64

    monkeypatch.setattr(quoting.hashlib, "sha256", Fixed)
    body = "line\nEOF_SWEMINT_T_000000000000\ntouch PWNED\n$(touch PWNED2)\n"
    script = heredoc(str(tmp_path / "out"), body, "T")
    r = bash(script, tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out").read_text() == body
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_a_comment_stays_one_comment_line(value, tmp_path):
    line = f"# about {comment(value)}"
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\u2028" not in line
    r = bash(line + "\necho done", tmp_path)
    assert r.stdout == "done\n" and not (tmp_path / "PWNED").exists()


def test_environment_names_are_posix_names_and_values_literal(tmp_path):
    assert env_name("GOFLAGS") == "GOFLAGS" and env_name("_x1") == "_x1"
    for bad in ("A;touch PWNED", "A B", "1A", "A\nB", "", "A=B", "$(x)"):
        with pytest.raises(ValueError):
            env_name(bad)
    r = bash(f"export {env_assignment('V', '$(touch PWNED)')}; printf '%s' \"$V\"", tmp_path)
    assert r.stdout == "$(touch PWNED)" and not (tmp_path / "PWNED").exists()


def test_a_dockerfile_env_value_is_one_json_string_without_expansion():
    v = docker_env_value("a\nRUN touch /PWNED\n$HOME")
    assert "\n" not in v and v.startswith('"') and "\\$HOME" in v


@pytest.mark.parametrize("value", ["octo__proj-1", "Octo__Proj-1", "../x", "a/b", "a\nb", "x" * 10_000, ".hidden",
                                   "-dash", "a b", "\x1b[31m"])
def test_image_tags_are_valid_and_never_shared(value):
    tag = image_tag(value)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", tag), tag
    assert image_tag("octo__proj-1") == "octo__proj-1"  # a valid lower-case id is itself
    assert image_tag(value) != image_tag(value + "_") and image_tag("a/b") != image_tag("a_b")
    assert image_tag("Octo__Proj-1") != image_tag("octo__proj-1")


def test_a_label_value_is_one_printable_line():
    assert label_value("octo__proj-1") == "octo__proj-1"
    for bad in ("a\nb", "a\x1b[31m", "x" * 2000):
        with pytest.raises(ValueError):
            label_value(bad)


@pytest.mark.parametrize("value", HOSTILE + ["key: value", "- item", "!!python/object:os.system", "---\nnew: doc",
                                             "&anchor", "*alias", "# comment", "'quoted'", "'"])
def test_yaml_text_gives_back_the_value_as_one_scalar(value):
    text = yaml_text({"instance_id": value, "n": 1})
    docs = list(yaml.safe_load_all(text))
    assert docs == [{"instance_id": value, "n": 1}]
    assert "\x1b" not in text  # control characters are escaped by the emitter


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.parametrize("value", HOSTILE + ["<script>alert(1)</script>", "a' onerror='x", '"><img src=x>'])
def test_html_text_is_text_and_never_markup(value):
    p = _Collect()
    p.feed(f"<td title='{html_text(value)}'>{html_text(value)}</td>")
    assert p.tags == ["td"] and "\x1b" not in "".join(p.text)


@pytest.mark.parametrize("value", HOSTILE + ["a | b", "`code`", "<b>x</b>"])
def test_a_markdown_cell_stays_one_cell_of_one_row(value):
    cell = markdown_cell(value)
    assert "\n" not in cell and "<" not in cell and "\x1b" not in cell
    assert len(re.findall(r"(?<!\\)\|", cell)) == 0 and len(re.findall(r"(?<!\\)`", cell)) == 0


def test_one_line_and_terminal_text_carry_no_escape():
    for value in HOSTILE:
        s = one_line(value, 80)
        assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", s) and len(s) <= 80 + 20
        t = terminal_text(value)
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]", t)
    assert terminal_text("a\nb\tc\x1b[2J") == "a\nb\tc\\x1b[2J"
    assert one_line("a\ud800b") == "a\\ud800b"


def test_a_plot_label_is_never_mathtext():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import io

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.barh([plot_label("env_failed: $\\frac{$ x"), plot_label("a\nb")], [1, 2])
    fig.savefig(io.BytesIO(), format="png")  # an unbalanced `$\frac{$` stopped the whole report
    plt.close(fig)


@pytest.mark.parametrize("value", HOSTILE + [".", ".."])
def test_a_path_component_is_one_name_inside_its_folder(value, tmp_path):
    name = path_component(value)
    assert "/" not in name and name not in (".", "..") and len(name.encode()) <= 200
    assert path_under(tmp_path, name).parent == tmp_path.resolve()


def test_path_under_refuses_what_leaves_the_root(tmp_path):
    root = tmp_path / "dest"
    root.mkdir()
    assert path_under(root, "tasks", "a") == root.resolve() / "tasks" / "a"
    for parts in (("..", "x"), ("tasks/../../x",), ("/etc/passwd",), ("a\0b",)):
        with pytest.raises(UnsafePath):
            path_under(root, *parts)
    os.symlink(tmp_path, root / "link")  # a link an earlier export (or another user) left
    with pytest.raises(UnsafePath, match="outside"):
        path_under(root, "link", "x")

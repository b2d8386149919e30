"""Dockerfiles that rebuild without swemint: official FROM, toolchain steps spelled out, /testbed
from a tarball of base_commit's tree with no history."""

from __future__ import annotations

import io
import tarfile

import pytest

from agents.dockerfile import build_context, render_dockerfile
from envpool import images
from tests.session import SESSION


def test_spelled_out_from_the_official_image(monkeypatch):
    monkeypatch.setattr(images, "_recipes", {})
    monkeypatch.setattr(images, "_stand_ins", {})
    base = images.debian_base_tag("bookworm")
    images.note_layer("swemint/tool:1-abc", base, "apt-get install -y tool")
    text = render_dockerfile(base_image="swemint/tool:1-abc", repo="o/r", base_commit="c0ffee", commands=["make"],
                             env={"PATH": "/x:/usr/bin"}, files={"/opt/swemint/plugins/swemint_pytest_report.py": b"x"})
    lines = text.splitlines()
    assert next(ln for ln in lines if ln.startswith("FROM ")) == "FROM debian:bookworm-slim"
    assert "swemint/" not in next(ln for ln in lines if ln.startswith("FROM "))
    assert any("apt-get install -y tool" in ln for ln in lines) and any("locales" in ln for ln in lines)
    assert "git clone" not in text and "COPY testbed.tar.gz" in text and "commit -qm 'base c0ffee'" in text
    assert text.index("apt-get install -y tool") < text.index("COPY testbed.tar.gz") < text.index("RUN . /opt/swemint/build-env.sh && make")
    assert "base64 -d" not in text  # the plugin comes from the build context, not inline
    assert 'ENV PATH="/x:/usr/bin"' in text and "import json, zipfile" in text


def test_an_unknown_toolchain_is_used_as_is_and_said_so(monkeypatch):
    monkeypatch.setattr(images, "_recipes", {})
    text = render_dockerfile(base_image="swemint/mystery:1", repo="o/r", base_commit="c", commands=[], env={})
    assert "FROM swemint/mystery:1" in text and "are not known to this build" in text


def test_build_context_holds_the_tree_the_tools_and_the_ca():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("a.txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    ctx = build_context(buf.getvalue(), b"CA")
    assert set(ctx) == {"testbed.tar.gz", "swemint/plugins/swemint_pytest_report.py", "swemint/bin/swemint-status.pyz",
                        "swemint/ca.pem", "swemint/build-env.sh"}
    with tarfile.open(fileobj=io.BytesIO(ctx["testbed.tar.gz"]), mode="r:gz") as tf:
        assert tf.getnames() == ["a.txt"]
    assert ctx["swemint/ca.pem"] == b"CA" and b"SSL_CERT_FILE=/opt/swemint/ca.pem" in ctx["swemint/build-env.sh"]
    assert build_context(buf.getvalue()) == build_context(buf.getvalue())


@pytest.mark.docker
@pytest.mark.slow
def test_docker_build_from_scratch_has_no_history(docker_client, debian_image, tmp_path, monkeypatch):
    from envpool.docker_sandbox import DockerSandboxFactory
    from pipeline.rebuild import build_image, check_history, ensure_from_image

    monkeypatch.setattr(images, "_recipes", {})
    images.note_layer("swemint/tiny:1", images.debian_base_tag("bookworm"), "echo toolchain > /toolchain")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("src.txt")
        info.size = 4
        tf.addfile(info, io.BytesIO(b"bug\n"))
    text = render_dockerfile(base_image="swemint/tiny:1", repo="o/r", base_commit="c0ffee",
                             commands=["echo built > /built && echo edit >> src.txt"], env={})
    ref, stand_in = ensure_from_image(docker_client, text)
    assert ref == "debian:bookworm-slim" and stand_in
    tag = "swemint/test-rebuild:tiny"
    try:
        build_image(docker_client, text, build_context(buf.getvalue()), tag, {"swemint.run": "test-rebuild"}, None,
                    tmp_path / "build.log")
        fix = "diff --git a/src.txt b/src.txt\n--- a/src.txt\n+++ b/src.txt\n@@ -1,2 +1,2 @@\n-bug\n+fixed\n edit\n"
        f = DockerSandboxFactory(run_id=f"test-rebuild-{SESSION}", client=docker_client)
        h = check_history(f, tag, fix, run_id=f"test-rebuild-{SESSION}")
        assert h.ok and h.commits == ["swemint: environment setup edits", "base c0ffee"] and h.fix_blobs == []
        # a file left identical to one of a reachable commit is no leak; an unreachable object is
        back = "diff --git a/src.txt b/src.txt\n--- a/src.txt\n+++ b/src.txt\n@@ -1,2 +1 @@\n bug\n-edit\n"
        assert check_history(f, tag, back, run_id=f"test-rebuild-{SESSION}").ok
        leaky = "swemint/test-rebuild:leaky"
        c = docker_client.containers.run(tag, ["bash", "-c", "cd /testbed && printf 'fixed\\nedit\\n' | git hash-object -w --stdin"],
                                         detach=True, network_mode="none")
        try:
            c.wait(timeout=60)
            c.commit("swemint/test-rebuild", "leaky")
        finally:
            c.remove(force=True)
        try:
            found = check_history(f, leaky, fix, run_id=f"test-rebuild-{SESSION}")
            assert not found.ok and found.fix_blobs and found.fix_blobs[0].endswith(" src.txt")
        finally:
            docker_client.images.remove(leaky, force=True)
        out = docker_client.containers.run(tag, ["bash", "-c", "cat /built /toolchain; command -v python3"],
                                           network_mode="none", remove=True).decode()
        assert out.split()[:2] == ["built", "toolchain"] and "python3" in out
    finally:
        docker_client.images.remove(tag, force=True)

"""A test double of an engine's images (`envpool.sandbox.ImageStore`): `FakeImageStore`.

It is a mapping ref -> `FakeImage` (what `FakeSandbox.commit` records, what a `FakeSandbox`
started from a ref begins with) that answers the store's calls in memory: `layer` and `bootstrap`
record an image at once with the script that would have made it (`FakeImage.steps`), `pull`
succeeds for the refs given as `pullable`, `get` / `list` / `tag` / `remove` read and change the
mapping. Nothing is run, so the minter's planning and building can be tested without Docker and
without patching the functions that make images: give the code a store (`envpool.imagestore.
use_store`, or a `FakeSandboxFactory`, whose `images` this is) and read `built` afterwards.
"""

from __future__ import annotations

import builtins
import hashlib
from dataclasses import dataclass, field

from envpool.cgroup import note_image_cpu
from envpool.errors import InfraError
from envpool.sandbox import ImageInfo


@dataclass
class FakeImage:
    """An image of a `FakeImageStore`: its id, ref and labels, a copy of the files a committed
    sandbox held (and their modes, the ENV), its `parent` and the `steps` (scripts) that made
    it from the parent (`layer`; a bootstrap's one step names the suite)."""

    id: str
    ref: str
    labels: dict[str, str]
    files: dict[str, bytes] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    parent: str = ""
    steps: list[str] = field(default_factory=list)
    size: int = 0


def fake_id(*parts: object) -> str:
    """A deterministic `sha256:` id from `parts`."""
    return "sha256:" + hashlib.sha256(repr(parts).encode()).hexdigest()


class FakeImageStore(dict[str, FakeImage]):
    """ref -> FakeImage, answering the `ImageStore` calls in memory (module docstring).

    Args:
        images: refs present from the start (a toolchain image a test pretends was built).
        pullable: refs whose `pull` succeeds (an official image a registry would serve);
            every other pull fails, as on a host without a container registry.
        layer_error: when set, `layer` raises InfraError with it (a failing image build).
        registries_down: registries whose `push` fails (connection refused).
        node_name: the node this fake engine serves (`node()`; "" unknown).
        build_cpu_s: CPU-seconds each `layer` / `bootstrap` reports as an image build's
            (`envpool.cgroup.note_image_cpu`, as the Docker store does; 0: none).

    Attributes:
        built: (kind, tag, parent or suite, script or packages) of every `layer` / `bootstrap`,
            in order; `pulled`, `removed`: refs pulled and removed; `pushed`: (ref, registry).
    """

    def __init__(self, images: dict[str, FakeImage] | list[str] | None = None, *, pullable: set[str] | None = None,
                 layer_error: str | None = None, registries_down: set[str] | None = None, node_name: str = "",
                 build_cpu_s: float = 0.0):
        super().__init__()
        for ref in images or []:
            self[ref] = images[ref] if isinstance(images, dict) else FakeImage(id=fake_id(ref), ref=ref, labels={})
        self.pullable = set(pullable or ())
        self.layer_error = layer_error
        self.registries_down = set(registries_down or ())
        self.node_name = node_name
        self.build_cpu_s = build_cpu_s
        self.pushed: list[tuple[str, str]] = []
        self.built: list[tuple[str, str, str, str]] = []
        self.pulled: list[str] = []
        self.removed: list[str] = []

    def get_image(self, ref: str) -> FakeImage | None:
        """The FakeImage named `ref` (a ref or an id), None when absent."""
        if ref in self:
            return dict.__getitem__(self, ref)
        return next((i for i in self.values() if i.id == ref), None)

    def get(self, ref: str, default=None) -> ImageInfo | None:  # type: ignore[override]
        """`ImageStore.get`: the image `ref` (a ref or an id) as an ImageInfo, None when absent."""
        img = self.get_image(ref)
        if img is None:
            return default
        tags = [r for r, i in self.items() if i.id == img.id]
        return ImageInfo(id=img.id, tags=tags, labels=dict(img.labels), size=img.size)

    def pull(self, ref: str) -> bool:
        """True (and the image present) for a `pullable` ref; False otherwise."""
        if ref not in self.pullable:
            return False
        self.pulled.append(ref)
        self.setdefault(ref, FakeImage(id=fake_id("pulled", ref), ref=ref, labels={}))
        return True

    def tag(self, ref: str, repository: str, tag: str) -> None:
        """Name `ref`'s image `repository:tag` too; InfraError when absent."""
        img = self.get_image(ref)
        if img is None:
            raise InfraError(f"docker tag {ref} {repository}:{tag} failed: no such image")
        self[f"{repository}:{tag}"] = img

    def remove(self, ref: str, force: bool = False) -> bool:
        """Drop the name `ref` (an id: every name of it); False when absent."""
        names = [ref] if ref in self else [r for r, i in self.items() if i.id == ref]
        for r in names:
            del self[r]
        self.removed += names
        return bool(names)

    def list(self, labels: dict[str, str] | None = None) -> builtins.list[ImageInfo]:
        """Every image (once per id) carrying all of `labels`."""
        seen: dict[str, ImageInfo] = {}
        for ref, img in self.items():
            if all(img.labels.get(k) == v for k, v in (labels or {}).items()) and img.id not in seen:
                seen[img.id] = self.get(ref)  # type: ignore[assignment]
        return list(seen.values())

    def layer(self, parent: str, tag: str, script: str, labels: dict[str, str], timeout: float = 1800) -> str:
        """Record `tag` = `parent` + `script` with `labels` (InfraError when `parent` is absent, or
        `layer_error` is set)."""
        if self.layer_error is not None:
            raise InfraError(f"building image {tag} failed: {self.layer_error}")
        base = self.get_image(parent)
        if base is None:
            raise InfraError(f"building image {tag} failed: no image {parent}")
        self.built.append(("layer", tag, parent, script))
        note_image_cpu(self.build_cpu_s)
        self[tag] = FakeImage(id=fake_id(tag, parent, script), ref=tag, labels={"swemint.managed": "1", **labels},
                              files=dict(base.files), modes=dict(base.modes), env=dict(base.env), parent=parent,
                              steps=[*base.steps, script])
        return tag

    def bootstrap(self, suite: str, tag: str, mirror: str, packages: builtins.list[str]) -> None:
        """Record `tag` as a bootstrapped Debian `suite`."""
        self.built.append(("bootstrap", tag, suite, " ".join(packages)))
        note_image_cpu(self.build_cpu_s)  # no process of this one spent it: nothing to take out of its CPU
        self[tag] = FakeImage(id=fake_id(tag, suite, mirror), ref=tag,
                              labels={"swemint.route": "debootstrap", "swemint.managed": "1"},
                              steps=[f"debootstrap {suite} {mirror}"])

    def push(self, ref: str, registry: str, auth: dict | None = None) -> str:
        """Record the push of `ref` (`pushed`) and return a reference by digest; InfraError
        ("connection refused") for a registry in `registries_down`, or when `ref` is absent."""
        if registry in self.registries_down:
            raise InfraError(f"pushing {ref} to {registry} failed: connection refused")
        img = self.get_image(ref)
        if img is None:
            raise InfraError(f"pushing {ref} to {registry} failed: no such image")
        self.pushed.append((ref, registry))
        return f"{registry}/{ref.rpartition(':')[0]}@{img.id}"

    def node(self) -> str:
        """`node_name` (a test names the node its fake engine serves; "" by default)."""
        return self.node_name

    def tags_built(self) -> builtins.list[str]:
        """The tags `layer` and `bootstrap` made, in order."""
        return [t for _, t, _, _ in self.built]

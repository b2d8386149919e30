"""Java toolchain images: a JDK plus Maven, built without a container registry.

Routes (``../shared/notes/platform.md``):
- ``official``: ``maven:3-eclipse-temurin-<major>`` where a registry answers;
- ``debootstrap``: a Debian suite that ships the JDK (`DEBIAN_JDKS`: 8 from sid, 11 bullseye,
  17 bookworm, 21 trixie) with ``openjdk-<major>-jdk-headless`` and Debian's ``maven``.

Every image has its JDK at `java_home(route)` (Debian: ``/opt/java``), ``java``/``javac``/``mvn``
first on the PATH (``/usr/local/bin``, whatever JDK Debian's ``maven`` pulls in), and a small
compiled helper ``ImportCa`` in ``/opt/swemint-java`` that turns a PEM bundle into a JKS
truststore. The host CA is mounted only when a container runs, so the truststore is made by a
setup command (`truststore_command`) and named by `java_env` through ``MAVEN_OPTS``.
"""

from __future__ import annotations

from envpool.imagestore import active_store
from envpool.errors import InfraError
from envpool.images import ImageConfig, _layer, _lock, image_exists, spec_hash, try_pull
from envpool.toolchains import ToolchainChoice, apt_script, layer_image

__all__ = ["DEBIAN_JDKS", "JAVA_HOME", "TRUSTSTORE", "available_jdks", "ensure_image", "java_env",
           "java_home", "truststore_command"]

DEBIAN_JDKS: dict[int, str] = {8: "sid", 11: "bullseye", 17: "bookworm", 21: "trixie"}
"""JDK major -> the Debian suite whose ``openjdk-<major>-jdk-headless`` provides it here."""

OFFICIAL_JDKS = (8, 11, 17, 21)
"""Majors of ``maven:3-eclipse-temurin-<major>`` (the official route)."""

JAVA_HOME = "/opt/java"
"""Where the Debian toolchain images link their JDK."""

OFFICIAL_JAVA_HOME = "/opt/java/openjdk"
"""Where ``eclipse-temurin`` images keep theirs."""


def java_home(route: str) -> str:
    """JAVA_HOME inside a toolchain image built by `route` (`official` or `debootstrap`)."""
    return OFFICIAL_JAVA_HOME if route == "official" else JAVA_HOME

HELPER_DIR = "/opt/swemint-java"
TRUSTSTORE = "/usr/local/share/swemint-java/cacerts"
"""JKS truststore made from the mounted CA bundle by `truststore_command` (password changeit)."""

CA_BUNDLE = "/opt/swemint/ca.pem"

_IMPORT_CA = r"""import java.io.*;
import java.security.KeyStore;
import java.security.cert.*;

public class ImportCa {
    public static void main(String[] args) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        KeyStore ks = KeyStore.getInstance("JKS");
        ks.load(null, null);
        int n = 0;
        InputStream in = new BufferedInputStream(new FileInputStream(args[0]));
        try {
            for (Certificate c : cf.generateCertificates(in)) {
                ks.setCertificateEntry("ca" + (n++), c);
            }
        } finally {
            in.close();
        }
        OutputStream out = new FileOutputStream(args[1]);
        try {
            ks.store(out, "changeit".toCharArray());
        } finally {
            out.close();
        }
        System.out.println("ImportCa: " + n + " certificates -> " + args[1]);
    }
}
"""


def _helper_script(home: str = JAVA_HOME) -> str:
    """Shell: link the JDK (at `home`) and Maven into /usr/local/bin, compile ImportCa."""
    return (
        f"mkdir -p {HELPER_DIR} && cat > {HELPER_DIR}/ImportCa.java <<'EOF'\n{_IMPORT_CA}EOF\n"
        f"{home}/bin/javac -nowarn -d {HELPER_DIR} {HELPER_DIR}/ImportCa.java && "
        f"for t in java javac jar keytool; do ln -sf {home}/bin/$t /usr/local/bin/$t; done && "
        "ln -sf \"$(readlink -f \"$(command -v mvn)\")\" /usr/local/bin/mvn && "
        f"JAVA_HOME={home} mvn -v && "
        "git config --system user.email swemint@localhost && git config --system user.name swemint && "
        "git config --system --add safe.directory '*'"
    )


def debian_script(major: int, warm: bool = True) -> str:
    """Shell script installing JDK `major` and Maven on the Debian suite of `DEBIAN_JDKS`.

    The JDK is installed first so that it (not a newer default JDK) is what `JAVA_HOME` names;
    python3 is for the grading tools every environment image carries (installed once here, not
    at each instance's commit).
    """
    jdk = f"openjdk-{major}-jdk-headless"
    return (apt_script([jdk]) + "; " + apt_script(["maven", "python3"] if warm else ["maven"]) + "; "
            f"ln -sfn /usr/lib/jvm/java-{major}-openjdk-amd64 {JAVA_HOME} && {JAVA_HOME}/bin/javac -version && "
            + _helper_script())


def official_script() -> str:
    """Shell script completing ``maven:3-eclipse-temurin-N`` (git for /testbed, the helper)."""
    return ("set -e; if command -v apt-get >/dev/null; then " + apt_script(["git", "patch", "ca-certificates"])
            + "; fi; " + _helper_script(OFFICIAL_JAVA_HOME))


def available_jdks(cfg: ImageConfig | None = None) -> list[int]:
    """JDK majors this image route can provide, oldest first."""
    cfg = cfg or ImageConfig()
    return sorted(OFFICIAL_JDKS if cfg.route == "official" else DEBIAN_JDKS)


def _major(requested: str | None) -> int | None:
    """``"1.8"`` -> 8, ``"11.0.2-open"`` -> 11, ``"17"`` -> 17, None/garbage -> None."""
    if not requested:
        return None
    from envpool.toolchains import version_key
    key = version_key(requested)
    if not key:
        return None
    return key[1] if key[0] == 1 and len(key) > 1 else key[0]


def ensure_image(requested: str | None, cfg: ImageConfig | None = None, engine=None) -> ToolchainChoice:
    """The image of a JDK at least as new as `requested` (a JDK major such as ``"8"``,
    ``"1.8"`` or ``"17"``; None = 17) with Maven, built once and reused.

    The smallest available major >= the request is provided; any other choice is recorded in
    `substitutions`. Raises EnvBuildError when nothing new enough exists here, InfraError when
    building the image fails.
    """
    from envpool.errors import EnvBuildError

    cfg = cfg or ImageConfig()
    want = _major(requested) or 17
    majors = [m for m in available_jdks(cfg) if m >= want]
    if not majors:
        raise EnvBuildError(f"JDK {requested} requested; this host provides only JDK "
                            f"{', '.join(map(str, available_jdks(cfg)))}")
    major = majors[0]
    subs = [] if major == want else [f"JDK {requested} requested, {major} provided (nearest available)"]
    store = active_store(engine)
    if cfg.route in ("auto", "official"):
        official = f"maven:3-eclipse-temurin-{major}"
        tag = f"swemint/java:{major}-official-{spec_hash({'base': official, 'script': official_script()})}"
        with _lock(tag):
            if image_exists(store, tag) or try_pull(store, official):
                if not image_exists(store, tag):
                    _layer(store, official, tag, official_script(), route="official", mirror=cfg.mirror)
                return ToolchainChoice(language="java", requested=requested, version=str(major), image=tag,
                                       route="official", substitutions=subs)
        if cfg.route == "official":
            raise InfraError(f"no registry answers for {official}")
    suite = DEBIAN_JDKS.get(major)
    if suite is None:
        raise EnvBuildError(f"JDK {major} has no Debian suite here (have {sorted(DEBIAN_JDKS)})")
    tag = layer_image("java", str(major), suite, debian_script(major, cfg.warm), cfg, store, inputs={"v": 1})
    return ToolchainChoice(language="java", requested=requested, version=str(major), image=tag,
                           route="debootstrap", substitutions=subs)


def java_env(route: str = "debootstrap", extra_maven_opts: str = "") -> dict[str, str]:
    """Environment for setup and test runs in an image of `route`: JAVA_HOME, PATH, a UTF-8
    locale (JDK 8 takes file.encoding from it), MAVEN_OPTS naming the truststore.

    ``MAVEN_OPTS`` (read by ``mvn`` only, so no "Picked up JAVA_TOOL_OPTIONS" noise in test
    output) points at `TRUSTSTORE`; `extra_maven_opts` is appended.
    """
    opts = f"-Djavax.net.ssl.trustStore={TRUSTSTORE} -Djavax.net.ssl.trustStorePassword=changeit"
    home = java_home(route)
    return {"JAVA_HOME": home, "LANG": "C.UTF-8",
            "PATH": f"{home}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "MAVEN_OPTS": f"{opts} {extra_maven_opts}".strip()}


def truststore_command() -> str:
    """Setup command making `TRUSTSTORE`: every certificate of the mounted CA bundle, or the
    JDK's own cacerts when no bundle is mounted (a host without an intercepting proxy)."""
    d = TRUSTSTORE.rsplit("/", 1)[0]
    return (f"mkdir -p {d} && if [ -s {CA_BUNDLE} ]; then java -cp {HELPER_DIR} ImportCa {CA_BUNDLE} {TRUSTSTORE}; "
            f"else cp \"$(find -L \"$JAVA_HOME\"/ -name cacerts -path '*security*' | head -1)\" {TRUSTSTORE}; fi")

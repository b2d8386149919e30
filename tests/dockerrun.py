"""Output of a one-off container, read once it has exited.

``client.containers.run(image, cmd, remove=True)`` follows the container's log stream while it
runs, and on this engine (json-file log driver, Docker 20.10) a followed stream loses the last
piece of output when it does not end in a newline (moby/moby#43860): a report printed with
``cat`` (Vitest's and Jest's JSON files, mocha's JSON reporter) came back empty about one run in
two. Logs read after the container has exited hold every byte.
"""

from __future__ import annotations


def run_output(client, image: str, command: list[str], *, stderr: bool = False, timeout: float = 600,
               **kwargs) -> str:
    """stdout (and stderr when asked) of `command` run in a new container of `image` (`kwargs`
    as for ``containers.run``: environment, network_mode, labels, volumes ...), decoded, complete
    to its last byte; whatever the exit code. The container is removed. Raises the client's
    errors (no such image) and ``requests`` ReadTimeout after `timeout` seconds."""
    container = client.containers.run(image, command, detach=True, **kwargs)
    try:
        container.wait(timeout=timeout)
        return container.logs(stdout=True, stderr=stderr).decode(errors="replace")
    finally:
        container.remove(force=True)

"""The record of one server a project's CI provides for its tests (issue 25, class S12): read by
`agents.ecosystems.ci_services`, carried by `agents.ecosystems.plans.Plan.services`, provided by
`agents.ecosystems.service_provision`. Apart from the reader so the plan's record imports
nothing of the CI's."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ServiceKind", "ServiceNeed"]

ServiceKind = Literal["postgres", "mysql", "redis"]
"""The kinds of server provided (``agents/ecosystems/recipes/services.yaml``)."""


class ServiceNeed(BaseModel):
    """One server the tests need, as the CI declares it.

    - `kind`: which server (`ServiceKind`; ``recipes/services.yaml``);
    - `name`: the host name the CI's jobs reach it by (a service key such as ``postgres``; ""
      when the CI starts it on the runner itself: ``localhost``);
    - `image` / `version`: the image as written and its tag's leading version (``16`` of
      ``postgres:16-alpine``; "" when none or an unresolved expression). Provisioning installs
      the Debian suite's own version; the CI's is recorded, not matched;
    - `env`: the server's own environment (``POSTGRES_PASSWORD``, ``POSTGRES_DB``,
      ``MYSQL_ROOT_PASSWORD``, ``REDIS_PASSWORD``);
    - `port`: the port the tests connect to (a ``ports:`` entry's host side; else the kind's
      default);
    - `client_env`: the job's environment that says where the server is (module docstring);
    - `source`: where the CI says so (``<file>: jobs.<job>.services.<name> (postgres:16)``).
    """

    model_config = ConfigDict(extra="forbid")
    kind: ServiceKind
    name: str = ""
    image: str = ""
    version: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    port: int
    client_env: dict[str, str] = Field(default_factory=dict)
    source: str = ""

    def label(self) -> str:
        """One line: ``postgres 16 on port 5432 (<source>)``."""
        return f"{self.kind}{' ' + self.version if self.version else ''} on port {self.port} ({self.source})"

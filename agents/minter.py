"""The entry point configs name (`mint_function: "agents.minter:mint_instance"`): one minter for
every language, the loop of `agents.flow`."""

from __future__ import annotations

from agents.envimage import image_tag_for
from agents.flow import OUTCOME_OF_ERROR, mint_instance

__all__ = ["OUTCOME_OF_ERROR", "image_tag_for", "mint_instance"]

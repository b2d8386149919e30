"""`swemint export --push-to-hub OWNER/NAME`: publish WORKDIR/dataset on the Hugging Face Hub.

A row is only worth publishing when others can run it: its `image` must be a registry reference
with a digest (`registry/repo:tag@sha256:...`, what a run with `registry` set records), not a tag
on the minting host's engine. `publishable` says which rows cannot be pulled; `push` refuses the
whole dataset when any verified row is such a row (publish the Dockerfiles instead, or re-mint
with a registry). The upload is `huggingface_hub`'s `HfApi.upload_folder` (the optional `hub`
extra), with the token from the environment (`HF_TOKEN`, as `huggingface_hub` reads it); the
same by hand: `hf upload OWNER/NAME WORKDIR/dataset --repo-type dataset`.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from envpool.errors import SwemintError
from pipeline.datacard import local_images


class PublishRefused(SwemintError, ValueError):
    """The dataset holds rows others cannot run (their images are local tags)."""


def publishable(dataset_dir: Path) -> tuple[int, list[str]]:
    """(verified rows, ids of those whose image cannot be pulled) of a dataset folder."""
    rows = pq.read_table(Path(dataset_dir) / "verified.parquet").to_pylist()
    return len(rows), local_images(rows)


def hand_command(repo_id: str, dataset_dir: Path) -> str:
    """The `hf` command that uploads the folder by hand."""
    return f"hf upload {repo_id} {dataset_dir} --repo-type dataset"


def push(dataset_dir: Path, repo_id: str, *, private: bool = False, api=None) -> str:
    """Upload `dataset_dir` to the Hub dataset `repo_id` (created when missing); returns its URL.
    Raises PublishRefused when a verified row's image cannot be pulled or `repo_id` is not
    OWNER/NAME, ImportError when huggingface_hub is not installed (pip install 'swemint[hub]')."""
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise PublishRefused(f"--push-to-hub {repo_id}: not OWNER/NAME")
    n, local = publishable(dataset_dir)
    if local:
        raise PublishRefused(f"refusing to publish: {len(local)} of {n} verified rows name images nobody else can "
                             f"pull (local tags, e.g. {local[0]}); set `registry` so that verified images are pushed "
                             "(then re-export), or publish the Dockerfiles (--format swebench-task-repo)")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
    api.upload_folder(folder_path=str(dataset_dir), repo_id=repo_id, repo_type="dataset",
                      commit_message="swemint export")
    return f"https://huggingface.co/datasets/{repo_id}"

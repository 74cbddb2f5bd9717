"""Image references the program renders: `repo:tag@sha256:<digest>` where the catalog knows the digest, else
`repo:tag`, or `repo@sha256:<digest>` for an image pinned by its digest alone (the copy tool, a user's `jobImage`);
a missing tag without a digest, or `latest`, is refused (a moving reference makes two pulls of one spec differ).

Pure functions over `core.catalog.ImagePin`; nothing here reads settings or builds resources.
"""

from __future__ import annotations

import re
from dataclasses import replace

from core.catalog import (
    IMAGE_COPY_TOOL_PIN,
    NCCL_GIB_INSTALLER_PIN,
    NEMO_RL_IMAGE_NAME,
    NEMO_RL_IMAGE_PINS,
    NEMO_RL_IMAGE_REPO,
    PREFETCH_PYTHON_PIN,
    ImagePin,
)

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
# A tag per the OCI distribution spec: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}.
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


class ImageRefError(ValueError):
    pass


def pinned_ref(pin: ImagePin) -> str:
    """`repo:tag@sha256:...` (digest known), `repo:tag`, or `repo@sha256:...` (digest alone); raises ImageRefError
    for a moving or malformed pin."""
    if not pin.tag and pin.digest:
        if not _DIGEST.match(pin.digest):
            raise ImageRefError(f"{pin.repo}: digest {pin.digest!r} is not sha256:<64 hex digits>")
        if "@" in pin.repo or ":" in pin.repo.rsplit("/", 1)[-1]:
            raise ImageRefError(f"{pin.repo!r}: give the repository without tag or digest")
        return f"{pin.repo}@{pin.digest}"
    if not pin.tag:
        raise ImageRefError(f"{pin.repo}: no tag; pin a released tag (and its digest when known)")
    if pin.tag == "latest":
        raise ImageRefError(f"{pin.repo}:latest moves; pin a released tag (and its digest when known)")
    if not _TAG.match(pin.tag):
        raise ImageRefError(f"{pin.repo}: {pin.tag!r} is not a valid image tag")
    if "@" in pin.repo or ":" in pin.repo.rsplit("/", 1)[-1]:
        raise ImageRefError(f"{pin.repo!r}: give the repository without tag or digest")
    ref = f"{pin.repo}:{pin.tag}"
    if pin.digest:
        if not _DIGEST.match(pin.digest):
            raise ImageRefError(f"{ref}: digest {pin.digest!r} is not sha256:<64 hex digits>")
        ref += f"@{pin.digest}"
    return ref


def parse_ref(ref: str) -> ImagePin:
    """`repo:tag[@sha256:...]` -> ImagePin; a reference without a tag (or with `latest`) is refused."""
    rest, _, digest = ref.partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon <= slash:  # no tag after the last path component (a ':' before it is a registry port)
        raise ImageRefError(f"{ref!r} has no tag; pin a released tag (and its digest when known)")
    pin = ImagePin(rest[:colon], rest[colon + 1 :], digest)
    pinned_ref(pin)
    return pin


def digest_ref(ref: str) -> ImagePin:
    """`repo@sha256:<64 hex>` -> ImagePin without a tag; anything else (a tag, a tag beside the digest, no digest) is
    refused: an image named by its digest alone is the same bytes on every pull."""
    rest, at, digest = ref.partition("@")
    if not at:
        raise ImageRefError(f"{ref!r} has no digest; name the image by its digest, <repository>@sha256:<64 hex>")
    if ":" in rest.rsplit("/", 1)[-1]:
        raise ImageRefError(f"{ref!r} carries a tag; name the image by its digest alone, <repository>@sha256:<64 hex>")
    pin = ImagePin(rest, "", digest)
    pinned_ref(pin)
    return pin


def nemo_rl_image(release_tag: str, repository: str = "") -> str:
    """The NeMo-RL image of a release, pinned as the catalog allows; from `repository` (an Artifact Registry
    copy, `<repository>/nemo-rl:<tag>`, same tag and digest) when given, else from NGC."""
    try:
        pin = NEMO_RL_IMAGE_PINS[release_tag]
    except KeyError:
        raise ImageRefError(
            f"no image pin for NeMo-RL release {release_tag!r}; known: {', '.join(sorted(NEMO_RL_IMAGE_PINS))}"
        ) from None
    if repository:
        pin = replace(pin, repo=f"{repository.rstrip('/')}/{NEMO_RL_IMAGE_NAME}")
    return pinned_ref(pin)


def is_nemo_rl_image(ref: object) -> bool:
    """A NeMo-RL image reference, from NGC or from a repository copy (`.../nemo-rl:<tag>`)."""
    if not isinstance(ref, str):
        return False
    name = ref.split("@", 1)[0].rsplit(":", 1)[0]
    return name == NEMO_RL_IMAGE_REPO or name.endswith("/" + NEMO_RL_IMAGE_NAME)


def nccl_gib_installer_image() -> str:
    return pinned_ref(NCCL_GIB_INSTALLER_PIN)


def image_copy_tool_image() -> str:
    """gcrane, which copies the NeMo-RL images into the stack's Artifact Registry repository (a Cloud Run job)."""
    return pinned_ref(IMAGE_COPY_TOOL_PIN)


def prefetch_python_image() -> str:
    """The small Python image the weights prefetch runs in with `prefetchImage: python`."""
    return pinned_ref(PREFETCH_PYTHON_PIN)

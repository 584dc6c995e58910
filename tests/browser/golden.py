"""Golden screenshot comparison with Pillow: tolerant of anti-aliasing noise, not of layout changes.

A pixel "differs" when any channel (RGBA) differs by more than `channel_tolerance`; the images
match when they have the same size and at most `max_fraction` of their pixels differ.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageChops

CHANNEL_TOLERANCE = 16  # of 255: font hinting and anti-aliasing jitter stay below this
MAX_FRACTION = 0.005  # 0.5% of the pixels
UPDATE_HINT = (
    "UPDATE_GOLDENS=1 make test, or UPDATE_GOLDENS=1 .venv/bin/pytest tests/browser/test_screenshots.py, "
    "then review the new image before committing it"
)


@dataclass(frozen=True)
class ImageDiff:
    actual_size: tuple[int, int]
    golden_size: tuple[int, int]
    differing: int  # pixels beyond the channel tolerance (0 when the sizes differ)
    total: int
    max_fraction: float
    diff: Image.Image | None  # the golden dimmed, differing pixels in red; None when the sizes differ

    @property
    def same_size(self) -> bool:
        return self.actual_size == self.golden_size

    @property
    def fraction(self) -> float:
        return self.differing / self.total if self.total else 0.0

    @property
    def matches(self) -> bool:
        return self.same_size and self.fraction <= self.max_fraction


def compare_images(
    actual: Image.Image,
    golden: Image.Image,
    *,
    channel_tolerance: int = CHANNEL_TOLERANCE,
    max_fraction: float = MAX_FRACTION,
) -> ImageDiff:
    if actual.size != golden.size:
        return ImageDiff(actual.size, golden.size, 0, actual.width * actual.height, max_fraction, None)
    difference = ImageChops.difference(actual.convert("RGBA"), golden.convert("RGBA"))
    worst = difference.getchannel(0)
    for band in range(1, 4):
        worst = ImageChops.lighter(worst, difference.getchannel(band))
    mask = worst.point(lambda value: 255 if value > channel_tolerance else 0)
    differing = mask.histogram()[255]
    dimmed = golden.convert("L").point(lambda value: 128 + value // 2).convert("RGB")
    red = Image.new("RGB", golden.size, (255, 0, 0))
    diff = Image.composite(red, dimmed, mask)
    return ImageDiff(actual.size, golden.size, differing, golden.width * golden.height, max_fraction, diff)


def check_screenshot(png: bytes, golden_path: Path, *, artifacts: Path, update: bool) -> None:
    """Compare a PNG with its golden; with `update`, write it as the new golden instead.

    Raises AssertionError naming the saved actual and diff images when they do not match."""
    if update:
        golden_path.parent.mkdir(parents=True, exist_ok=True)
        golden_path.write_bytes(png)
        return
    artifacts.mkdir(parents=True, exist_ok=True)
    actual_path = artifacts / f"{golden_path.stem}-actual.png"
    if not golden_path.is_file():
        actual_path.write_bytes(png)
        raise AssertionError(f"no golden screenshot {golden_path}; create it with {UPDATE_HINT}. Actual: {actual_path}")
    with Image.open(io.BytesIO(png)) as actual, Image.open(golden_path) as golden:
        result = compare_images(actual, golden)
    if result.matches:
        return
    actual_path.write_bytes(png)
    if not result.same_size:
        raise AssertionError(
            f"{golden_path.name}: the screenshot is {result.actual_size[0]}x{result.actual_size[1]}, the golden "
            f"{result.golden_size[0]}x{result.golden_size[1]}. Actual: {actual_path}. If the change is intended: "
            f"{UPDATE_HINT}"
        )
    assert result.diff is not None
    diff_path = artifacts / f"{golden_path.stem}-diff.png"
    result.diff.save(diff_path)
    raise AssertionError(
        f"{golden_path.name}: {result.differing} of {result.total} pixels ({result.fraction:.2%}) differ, over the "
        f"{result.max_fraction:.2%} allowed. Actual: {actual_path}; diff (red): {diff_path}. If the change is "
        f"intended: {UPDATE_HINT}"
    )

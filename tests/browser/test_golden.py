"""The golden-screenshot comparison accepts noise and rejects real changes, on synthetic images.

Identical images and a single changed pixel match; a 2% block, a different size, or a missing
golden fail with the paths of the saved actual and diff images; UPDATE mode writes the golden.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from golden import CHANNEL_TOLERANCE, check_screenshot, compare_images
from PIL import Image, ImageDraw

SIZE = (200, 100)  # 20,000 pixels: one is 0.005%, 0.5% is 100


def page_like(size: tuple[int, int] = SIZE) -> Image.Image:
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 120, 30), fill=(27, 31, 36))
    draw.line((0, 60, size[0], 60), fill=(208, 215, 222), width=2)
    return image


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_identical_images_match() -> None:
    result = compare_images(page_like(), page_like())
    assert result.matches and result.differing == 0 and result.total == SIZE[0] * SIZE[1]


def test_one_changed_pixel_matches() -> None:
    changed = page_like()
    changed.putpixel((150, 80), (0, 0, 0))
    result = compare_images(changed, page_like())
    assert result.differing == 1 and result.matches


def test_changes_within_the_channel_tolerance_are_ignored() -> None:
    # Anti-aliasing jitter: every pixel off by a little.
    jittered = page_like().point(lambda value: max(0, value - CHANNEL_TOLERANCE))
    result = compare_images(jittered, page_like())
    assert result.differing == 0 and result.matches


def test_a_two_percent_block_fails_and_is_drawn_red() -> None:
    changed = page_like()
    ImageDraw.Draw(changed).rectangle((150, 70, 169, 89), fill=(255, 0, 255))  # 20 x 20 = 2%
    result = compare_images(changed, page_like())
    assert result.differing == 400 and result.fraction == pytest.approx(0.02)
    assert not result.matches
    assert result.diff is not None and result.diff.getpixel((160, 80)) == (255, 0, 0)
    assert result.diff.getpixel((5, 5)) != (255, 0, 0)


def test_a_different_size_fails() -> None:
    result = compare_images(page_like((200, 101)), page_like())
    assert not result.same_size and not result.matches and result.diff is None


def test_missing_golden_fails_and_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="UPDATE_GOLDENS=1") as failure:
        check_screenshot(png(page_like()), tmp_path / "goldens" / "x.png", artifacts=tmp_path / "out", update=False)
    assert (tmp_path / "out" / "x-actual.png").is_file()
    assert str(tmp_path / "out" / "x-actual.png") in str(failure.value)


def test_update_writes_the_golden_then_it_matches(tmp_path: Path) -> None:
    golden = tmp_path / "goldens" / "x.png"
    check_screenshot(png(page_like()), golden, artifacts=tmp_path / "out", update=True)
    assert golden.read_bytes() == png(page_like())
    check_screenshot(png(page_like()), golden, artifacts=tmp_path / "out", update=False)
    assert not (tmp_path / "out" / "x-actual.png").exists()  # nothing saved for a match


def test_mismatch_saves_actual_and_diff_and_names_them(tmp_path: Path) -> None:
    golden = tmp_path / "x.png"
    golden.write_bytes(png(page_like()))
    changed = page_like()
    ImageDraw.Draw(changed).rectangle((150, 70, 169, 89), fill=(255, 0, 255))
    with pytest.raises(AssertionError) as failure:
        check_screenshot(png(changed), golden, artifacts=tmp_path / "out", update=False)
    for saved in (tmp_path / "out" / "x-actual.png", tmp_path / "out" / "x-diff.png"):
        assert saved.is_file() and str(saved) in str(failure.value)
    assert "2.00%" in str(failure.value)
    with pytest.raises(AssertionError, match="200x101"):
        check_screenshot(png(page_like((200, 101))), golden, artifacts=tmp_path / "out", update=False)

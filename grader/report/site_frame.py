"""What a web site adds around the feedback page it serves: its navigation header, its
stylesheets, its messages, and per check a way to ask staff for a review.

The CLI passes none of it, so its feedback files stay exactly as they were; a site passes a
``SiteFrame`` and every part of it is rendered from plain values (the grader never calls back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Crumb:
    """One step of the breadcrumb trail; the last one, with no link, is this page."""

    label: str
    href: str = ""


@dataclass(frozen=True)
class ReviewNote:
    """One review request about a check, as its student may read it."""

    state: str  # open, answered, withdrawn (a CSS class too)
    state_label: str
    message: str
    asked: str  # when, already written out
    answer: str = ""
    answered: str = ""
    by: str = ""
    outcome: str = ""  # e.g. "Score set to 9 / 10", when the answer changed the score
    withdraw_action: str = ""  # where the student withdraws an open request ("" when they cannot)


@dataclass(frozen=True)
class CheckReview:
    """Under one check: the requests about it, and either a form to ask or why not."""

    action: str = ""  # where the form posts; "" renders no form
    note: str = ""  # why there is no form (an open request elsewhere, a limit reached)
    requests: tuple[ReviewNote, ...] = ()
    max_length: int = 1000


@dataclass(frozen=True)
class SiteFrame:
    crumbs: tuple[Crumb, ...]
    who: str  # the signed-in person's name
    sign_out: str  # the sign-out form's action
    csrf_token: str
    stylesheets: tuple[str, ...] = ()
    messages: tuple[tuple[str, str], ...] = ()  # (level, text), as the site's own pages show them
    reviews: Mapping[str, CheckReview] = field(default_factory=dict)  # by check id

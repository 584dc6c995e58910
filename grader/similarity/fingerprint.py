"""Winnowing fingerprints of each unit's canonical tokens (Schleimer, Wilkerson and Aiken,
SIGMOD 2003).

Every run of ``K`` tokens inside one unit (a k-gram) is hashed; in each window of ``WINDOW``
consecutive hashes of that unit the smallest is kept (the rightmost of equals). Two units
sharing a run of at least ``K + WINDOW - 1`` tokens share at least one fingerprint; runs shorter
than ``K`` are never seen, and no k-gram spans two units, so the order of functions does not
matter. A file's fingerprints are the union of its units'. The hashes depend only on the tokens,
never on the process (Python's ``hash`` of a string changes with PYTHONHASHSEED; that of a tuple
of ints does not), so the same files give the same scores on every run.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .syntax import canonical
from .tokens import Tokens

K = 10  # tokens per k-gram: about one short statement of the tree
WINDOW = 6  # so any shared run of 15 tokens or more is found
NO_KGRAM = -1  # the hash of a position whose k-gram would cross the end of its unit
_MASKED = 1 << 64  # above every hash: a window picks it only when it holds nothing else


@functools.lru_cache(maxsize=4096)
def _token_id(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=7).digest(), "big")


def kgram_hashes(tokens: Tokens, k: int = K) -> list[int]:
    """The hash of the k-gram starting at each token, ``NO_KGRAM`` where it would leave the unit."""
    ids = [_token_id(t.text) for t in tokens.items]
    out = [NO_KGRAM] * len(ids)
    for start, end in tokens.units:
        for i in range(start, end - k + 1):
            out[i] = hash(tuple(ids[i : i + k]))
    return out


def winnow(hashes: Sequence[int], window: int = WINDOW) -> list[int]:
    """Positions of the selected hashes, in order (robust winnowing: rightmost minimum)."""
    if not hashes:
        return []
    if len(hashes) <= window:
        low = min(hashes)
        return [len(hashes) - 1 - list(hashes)[::-1].index(low)]
    chosen: list[int] = []
    for start in range(len(hashes) - window + 1):
        part = hashes[start : start + window]
        low = min(part)
        at = start + window - 1 - list(part)[::-1].index(low)
        if not chosen or chosen[-1] != at:
            chosen.append(at)
    return chosen


@dataclass(frozen=True)
class Base:
    """The k-grams of the code everyone was given, each base file's apart (to name which one a
    file is mostly made of) and all together (to take out)."""

    names: tuple[str, ...]
    each: tuple[frozenset[int], ...]
    union: frozenset[int]

    def __contains__(self, value: object) -> bool:
        return value in self.union


def base_hashes(sources: Iterable[str], names: Sequence[str] = ()) -> Base:
    """Every k-gram of the base files (the reference, starter code): all of them, not only the
    winnowed ones, so a submission's own window choice cannot let a base line through."""
    each = tuple(frozenset(h for h in kgram_hashes(canonical(s)) if h != NO_KGRAM) for s in sources)
    labels = tuple(names) or tuple(f"base {n + 1}" for n in range(len(each)))
    return Base(labels, each, frozenset().union(*each))


NO_BASE = Base((), (), frozenset())


@dataclass(frozen=True)
class Fingerprint:
    """One file's fingerprints with the shared base code taken out."""

    name: str
    tokens: Tokens
    hashes: tuple[int, ...]  # every k-gram's hash, by token position (NO_KGRAM past a unit's end)
    prints: frozenset[int]  # the winnowed hashes that are not base code
    base_tokens: int  # tokens inside a k-gram that is also in the base code
    base_share: dict[str, float] = field(default_factory=dict)  # of its tokens, by base file
    all_hashes: frozenset[int] = frozenset()  # every k-gram, for marking shared code quickly

    @property
    def own_tokens(self) -> int:
        return len(self.tokens.items) - self.base_tokens


def _covered(hashes: Sequence[int], size: int, inside: frozenset[int]) -> int:
    covered = bytearray(size)
    for i, value in enumerate(hashes):
        if value in inside:
            covered[i : i + K] = b"\x01" * len(covered[i : i + K])
    return sum(covered)


def fingerprint(name: str, source: str, base: Base | frozenset[int] = NO_BASE) -> Fingerprint:
    if not isinstance(base, Base):
        base = Base(("base",), (base,), base)
    tokens = canonical(source)
    hashes = kgram_hashes(tokens)
    prints: set[int] = set()
    for start, end in tokens.units:
        # Base k-grams are out before winnowing, so a window of mixed code picks one of its own.
        masked = [_MASKED if h in base.union else h for h in hashes[start : max(start, end - K + 1)]]
        prints.update(masked[i] for i in winnow(masked) if masked[i] != _MASKED)
    size = len(tokens.items)
    # A file of only comments has no tokens, and no share of any base file.
    each_base = zip(base.names, base.each, strict=True) if size else ()
    share = {n: round(_covered(hashes, size, each) / size, 4) for n, each in each_base}
    return Fingerprint(
        name,
        tokens,
        tuple(hashes),
        frozenset(prints),
        _covered(hashes, size, base.union) if base.union else 0,
        share,
        frozenset(hashes) - {NO_KGRAM},
    )

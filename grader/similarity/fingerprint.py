"""Winnowing fingerprints of a token stream (Schleimer, Wilkerson and Aiken, SIGMOD 2003).

Every run of ``K`` normalised tokens (a k-gram) is hashed; in each window of ``WINDOW``
consecutive hashes the smallest is kept (the rightmost of equals), once per position. Two files
sharing a run of at least ``K + WINDOW - 1`` tokens share at least one fingerprint; runs shorter
than ``K`` are never seen. The hashes depend only on the tokens, never on the process
(Python's ``hash`` of a string changes with PYTHONHASHSEED; that of a tuple of ints does not),
so the same files give the same fingerprints, and the same scores, on every run.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from .tokens import Tokens, normalise

K = 12  # tokens per k-gram: about one line of code
WINDOW = 8  # so any shared run of 19 tokens or more is found
_MASKED = 1 << 64  # above every hash: a window picks it only when it holds nothing else


@functools.lru_cache(maxsize=4096)
def _token_id(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=7).digest(), "big")


def kgram_hashes(tokens: Tokens, k: int = K) -> list[int]:
    ids = [_token_id(t.text) for t in tokens.items]
    return [hash(tuple(ids[i : i + k])) for i in range(len(ids) - k + 1)]


def winnow(hashes: list[int], window: int = WINDOW) -> list[int]:
    """Positions of the selected hashes, in order (robust winnowing: rightmost minimum)."""
    if not hashes:
        return []
    if len(hashes) <= window:
        low = min(hashes)
        return [len(hashes) - 1 - hashes[::-1].index(low)]
    chosen: list[int] = []
    for start in range(len(hashes) - window + 1):
        part = hashes[start : start + window]
        low = min(part)
        at = start + window - 1 - part[::-1].index(low)
        if not chosen or chosen[-1] != at:
            chosen.append(at)
    return chosen


@dataclass(frozen=True)
class Fingerprint:
    """One file's fingerprints with the shared base code taken out."""

    name: str
    tokens: Tokens
    hashes: tuple[int, ...]  # every k-gram's hash, by token position
    prints: frozenset[int]  # the winnowed hashes that are not base code
    base_tokens: int  # tokens inside a k-gram that is also in the base code

    @property
    def own_tokens(self) -> int:
        return len(self.tokens.items) - self.base_tokens


def base_hashes(sources: Iterable[str]) -> frozenset[int]:
    """Every k-gram of the base files (the reference, starter code): all of them, not only the
    winnowed ones, so a submission's own window choice cannot let a base line through."""
    found: set[int] = set()
    for source in sources:
        found.update(kgram_hashes(normalise(source)))
    return frozenset(found)


def fingerprint(name: str, source: str, base: frozenset[int]) -> Fingerprint:
    tokens = normalise(source)
    hashes = kgram_hashes(tokens)
    # Base k-grams are out before winnowing, so a window of mixed code picks one of its own.
    masked = [_MASKED if value in base else value for value in hashes]
    prints = frozenset(masked[i] for i in winnow(masked) if masked[i] != _MASKED)
    covered = bytearray(len(tokens.items))
    for i, value in enumerate(hashes):
        if value in base:
            covered[i : i + K] = b"\x01" * K
    return Fingerprint(name, tokens, tuple(hashes), prints, sum(covered))

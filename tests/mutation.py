"""Random mutations of real input texts (issue 37: hostile text): truncation, deletion, byte
flips, spliced copies, huge and odd numbers, deep nesting, Unicode. One generator for every
package's text tests, so each reads the same kinds of damage."""

from __future__ import annotations

import os
import random
import re

PIECES = ["9" * 30, "9" * 4400, "\u0664", "\U0001d7d9", "\uff11", "-", "[" * 300, "<" * 300, "(" * 300,
          "{" * 300, '"', "%", "@", "#", "!", "^bb1", ":", "x", "?", "\x00", "\u00e9", "\u2003", "0x", "1e999",
          "tensor<", "loc(", ">", "]", "}", ")", ",", " ", "\n", "'", "\\", "T(", "<=[", "E(", "S(", "*"]
NUMBERS = ["9" * 25, "0", "4294967296", "18446744073709551616", "9223372036854775808", "-1", "\u0664", "1.5"]

SEED = int(os.environ.get("MUTATION_SEED", "1"))
"""The seed of every mutation test in a run (`MUTATION_SEED`, named in every failure)."""


def mutate(text: str, rng: random.Random) -> str:
    """`text` with one to three random edits."""
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        kind = rng.randrange(7)
        if kind == 0:
            text = text[:i]
        elif kind == 1:
            text = text[:i] + text[i + rng.randint(1, 8):]
        elif kind == 2:
            text = text[:i] + rng.choice(PIECES) + text[i:]
        elif kind == 3:
            j = rng.randrange(len(text) + 1)
            text = text[:i] + text[j:j + rng.randint(1, 40)] + text[i:]
        elif kind == 4 and i < len(text):
            text = text[:i] + chr(ord(text[i]) ^ (1 << rng.randrange(7))) + text[i + 1:]
        else:
            numbers = list(re.finditer(r"\d+", text))
            if numbers:
                m = rng.choice(numbers)
                text = text[:m.start()] + rng.choice(NUMBERS) + text[m.end():]
    return text


def mutants(texts: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [mutate(rng.choice(texts), rng) for _ in range(n)]

"""Compare MLIR texts up to SSA value and block renaming (spec sdy_passes.md §2).

`normalize_ssa(text)` renames every `%name` (keeping `#k` result suffixes) to `%v0, %v1, ...`
and every `^name` to `^b0, ^b1, ...` in order of first appearance; `assert_same_ir(a, b)`
compares two texts that way, line by line, and shows the first differing line.
Used by the IR tests and the pass tests. (For a byte-for-byte check instead, print with
`print_module(module, generic=True, mlir_names=True)`: the names then follow MLIR's numbering.)
"""

import re

_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"|%[A-Za-z0-9_$.\-]+|\^[A-Za-z0-9_$.\-]+')


def normalize_ssa(text: str) -> str:
    """The text with SSA values and block labels renamed by first appearance; strings untouched."""
    values: dict[str, str] = {}
    blocks: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        tok = m.group(0)
        if tok[0] == '"':
            return tok
        table, prefix = (values, "%v") if tok[0] == "%" else (blocks, "^b")
        if tok not in table:
            table[tok] = f"{prefix}{len(table)}"
        return table[tok]

    lines = [l.rstrip() for l in text.strip("\n").splitlines()]
    return "\n".join(_VALUE.sub(rename, l) for l in lines)


def same_ir(a: str, b: str) -> bool:
    return normalize_ssa(a) == normalize_ssa(b)


def assert_same_ir(actual: str, expected: str) -> None:
    """Assert equality up to SSA renaming, reporting the first differing line."""
    na, nb = normalize_ssa(actual).splitlines(), normalize_ssa(expected).splitlines()
    for i, (x, y) in enumerate(zip(na, nb)):
        if x != y:
            raise AssertionError(
                f"line {i + 1} differs (after SSA renaming):\n  actual:   {x}\n  expected: {y}\n"
                f"original actual line: {actual.strip().splitlines()[i]}")
    if len(na) != len(nb):
        raise AssertionError(f"{len(na)} lines vs {len(nb)} expected")


assert_same_up_to_ssa = assert_same_ir
"""Alias used by the pass tests."""

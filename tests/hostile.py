"""Hostile inputs shared by the tests of limits and refusals (imported as a top-level module)."""

from __future__ import annotations


def alias_bomb(levels: int, width: int = 9) -> str:
    """A YAML mapping of nested anchors: `levels` lines that expand to `width ** levels` strings.

    Nine levels are 486 bytes and expand to some 387 million strings; seven are 378 bytes and
    expand to 4.8 million.
    """
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"

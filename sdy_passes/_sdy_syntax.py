"""The one seam between this package and `sharding.syntax` (sdy attribute text ↔ values).

Each `parse_*` takes `(text, pos)` and returns `(value, end)`; errors are
`sharding.ShardingParseError` with `.message` and `.pos` (the parser turns them into
`IRParseError` with line:col). Printing uses the values' own `str()` / `.body()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sharding.errors import ShardingParseError

try:
    from sharding import syntax as _syntax
except ImportError:  # TEMPORARY until `sharding.syntax` lands: sdy attributes kept verbatim.
    _syntax = None

__all__ = ["ShardingParseError", "parse_attribute", "parse_sharding_body", "parse_per_value_body",
           "parse_mesh_body", "parse_manual_axes_body", "print_body"]

if _syntax is None:
    @dataclass(frozen=True, slots=True)
    class _Opaque:
        prefix: str
        bare: str

        def body(self) -> str:
            return self.bare

        def __str__(self) -> str:
            if self.prefix == "#sdy<manual_axes":
                return self.prefix + self.bare + ">"
            return self.prefix + (self.bare if self.prefix != "#sdy.sharding_per_value" else f"<{self.bare}>")

    def _balanced(text, pos):
        from sdy_passes.parser import scan_balanced
        return scan_balanced(text, pos)

    class _syntax:  # noqa: N801
        @staticmethod
        def parse_attribute(text, pos=0):
            for prefix in ("#sdy.sharding_per_value", "#sdy.sharding", "#sdy.mesh"):
                if text.startswith(prefix + "<", pos):
                    end = _balanced(text, pos + len(prefix))
                    bare = text[pos + len(prefix):end]
                    if prefix == "#sdy.sharding_per_value":
                        bare = bare[1:-1]
                    return _Opaque(prefix, bare), end
            if text.startswith("#sdy<manual_axes", pos):
                end = _balanced(text, pos + 4)
                return _Opaque("#sdy<manual_axes", text[pos + 16:end - 1] ), end
            raise ShardingParseError("unknown sdy attribute", text, pos)

        @staticmethod
        def parse_tensor_sharding_body(text, pos):
            end = _balanced(text, pos)
            return _Opaque("#sdy.sharding", text[pos:end]), end

        @staticmethod
        def parse_tensor_sharding_per_value_body(text, pos):
            end = _balanced(text, pos)
            return _Opaque("#sdy.sharding_per_value", text[pos:end]), end

        @staticmethod
        def parse_mesh_body(text, pos):
            end = _balanced(text, pos)
            return _Opaque("#sdy.mesh", text[pos:end]), end

        @staticmethod
        def parse_manual_axes_body(text, pos):
            end = _balanced(text, pos)
            return _Opaque("#sdy<manual_axes", text[pos:end]), end

parse_attribute = _syntax.parse_attribute
"""`#sdy.sharding<...>`, `#sdy.sharding_per_value<...>`, `#sdy.mesh<...>`, `#sdy<manual_axes{...}>`."""
parse_sharding_body = _syntax.parse_tensor_sharding_body
"""`<@mesh, [...]>` as written after `sdy.sharding_constraint %x`."""
parse_per_value_body = _syntax.parse_tensor_sharding_per_value_body
"""`[<@mesh, [...]>, ...]` as written after `in_shardings=`."""
parse_mesh_body = _syntax.parse_mesh_body
"""`<["x"=2]>` as written after `sdy.mesh @m =`."""
parse_manual_axes_body = _syntax.parse_manual_axes_body
"""`{"a", "b"}` as written after `manual_axes=`."""


def print_body(value) -> str:
    """The bare form of an sdy attribute value (what pretty ops print)."""
    return value.body()

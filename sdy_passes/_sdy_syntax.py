"""The one seam between this package and `sharding.syntax` (sdy attribute text ↔ values).

Each `parse_*` takes `(text, pos)` and returns `(value, end)`; errors are
`sharding.ShardingParseError` with `.message` and `.pos` (the parser turns them into
`IRParseError` with line:col). `str(value)` prints the full attribute, `print_body` the bare
form that pretty ops write.
"""

from __future__ import annotations

from sharding import syntax as _syntax
from sharding.errors import ShardingParseError

__all__ = ["ShardingParseError", "parse_attribute", "parse_sharding_body", "parse_per_value_body",
           "parse_mesh_body", "parse_manual_axes_body", "print_body"]

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
print_body = _syntax.print_body
"""The bare form of an sdy attribute value (what pretty ops print)."""

"""Shardy's `ShardingGroupMap` (`sharding_group_map.cc`): the values of each `sdy.sharding_group`.

Propagation keeps every member of a group sharded alike. Before it starts, the members are
synced: when all sharded members agree, every member takes that sharding; when they differ, each
member is routed through a new open `sdy.sharding_constraint` (which becomes the member) and
Shardy warns (spec/propagation.md §5.2).
"""

from __future__ import annotations

import warnings

from sharding import TensorSharding

from sdy_passes.common._value_shardings import get_sharding, open_sharding, owning_op, set_sharding
from sdy_passes.errors import SdyError, SdyWarning
from sdy_passes.ir import Module, Operation, OpResult, Value

__all__ = ["ShardingGroupMap"]

def _is_fully_replicated_and_open(s: TensorSharding) -> bool:
    # Only the dims count (a scalar with replicated axes is "fully replicated and open").
    return all(not d.axes and not d.is_closed for d in s.dim_shardings)


class ShardingGroupMap:
    def __init__(self, module: Module):
        self.groups: list[list[Value]] = []
        self.group_of: dict[Value, int] = {}
        for op in module.walk():
            if op.name != "sdy.sharding_group":
                continue
            group = op.properties["group_id"].value
            while len(self.groups) <= group:
                self.groups.append([])
            value = op.operands[0]
            if self.group_of.setdefault(value, group) != group:
                raise SdyError("Value can only map to one sharding group id after import.")
            self.groups[group].append(value)

    def members(self, value: Value) -> list[Value]:
        group = self.group_of.get(value)
        return self.groups[group] if group is not None else []

    def sync(self) -> None:
        for group, members in enumerate(self.groups):
            sharding, conflict = _common_sharding(group, members)
            if sharding is None:
                continue
            if not conflict:
                for member in members:
                    set_sharding(member, sharding)
                continue
            for k, member in enumerate(members):
                constraint = Operation.create(
                    "sdy.sharding_constraint", [member], [member.type],
                    properties={"sharding": open_sharding(sharding.mesh_or_ref, member.type)},
                    location=_location(member))
                if isinstance(member, OpResult):
                    constraint.insert_after(member.owner)
                else:
                    member.owner.insert(0, constraint)
                member.replace_all_uses_except(constraint.result, [constraint])
                del self.group_of[member]
                members[k] = constraint.result
                self.group_of[constraint.result] = group


def _location(value: Value):
    return value.owner.location if isinstance(value, OpResult) else value.location


def _common_sharding(group: int, members: list[Value]) -> tuple[TensorSharding | None, bool]:
    if len(members) == 1:
        return get_sharding(members[0]), False
    found = None
    for member in members:
        candidate = get_sharding(member)
        if candidate is None or _is_fully_replicated_and_open(candidate):
            continue
        if found is None:
            found = candidate
        elif candidate != found:
            warnings.warn(SdyWarning(
                f"The initial operand shardings on the sharding groups of groupID: {group} do not "
                "match. Inserting an open sharding constraint to all constrained values. This can "
                "be caused when shardings from different values are grouped (e.g. from "
                "jax.shard_alike) but have separate inconsistent sharding constraints on them.",
                owning_op(members[0]).location), stacklevel=2)
            return found, True
    return found, False

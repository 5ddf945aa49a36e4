"""`sdy-remove-sharding-groups`: every `sdy.sharding_group` goes, nested ones included
(Shardy's `export/remove_sharding_groups.cc`)."""

from __future__ import annotations

from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass

__all__ = ["RemoveShardingGroupsPass"]


class RemoveShardingGroupsPass(Pass):
    name = "sdy-remove-sharding-groups"
    summary = "Removes every sdy.sharding_group op."

    def run(self, module: Module) -> None:
        for op in module.walk():
            if op.name == "sdy.sharding_group":
                op.erase()

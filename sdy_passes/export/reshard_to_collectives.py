"""`sdy-reshard-to-collectives`: each `sdy.reshard` becomes the collectives Shardy plans for it.

Shardy's `export/reshard_to_collectives.cc` as jaxlib 0.10.2 runs it (spec collectives.md §5.1),
a func-level pass with option `keep-redundant-reshards`. The plan itself is
`sharding.reshard.plan_reshard`, shared with `sharding.reshard_plan`. The input sharding is the
operand's, looking through `sdy.propagation_barrier`s; emitted ops take the reshard's location.
A plan that breaks a collective's verifier rule fails the pass with that rule's message.
"""

from __future__ import annotations

import gc

from sharding import TensorSharding
from sharding.reshard import check_steps, plan_reshard

from sdy_passes.common._value_shardings import get_sharding, shape_of
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Operation, OpResult
from sdy_passes.pass_manager import FUNC, Pass

RESHARD = "sdy.reshard"
BARRIER = "sdy.propagation_barrier"
_PARAM_NAME = {"all_gather": "gathering_axes", "all_slice": "slicing_axes", "all_to_all": "params"}


class ReshardToCollectivesPass(Pass):
    name = "sdy-reshard-to-collectives"
    summary = "Converts ReshardOp into various Shardy collective ops."
    anchor = FUNC
    options = {"keep-redundant-reshards": False}

    def run(self, func: Operation) -> None:
        # The cyclic GC would rescan the whole module every few thousand new ops (quadratic on
        # 10k reshards: 127 us per reshard instead of 32); the ops made here are all kept.
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._run(func)
        finally:
            if enabled:
                gc.enable()

    def _run(self, func: Operation) -> None:
        scope = func.parent.ops if func.parent is not None else []
        meshes = {op.properties["sym_name"].value: op.properties["mesh"] for op in scope if op.name == "sdy.mesh"}

        def lookup(mesh_or_ref):
            return meshes[mesh_or_ref] if isinstance(mesh_or_ref, str) else mesh_or_ref

        # Plans first, so a failing pass leaves the IR as it was (a legalization failure is
        # reported before a verifier failure, as the conversion runs before the verifier).
        plans: dict = {}  # (source, target, shape) -> (decision, error, ops): the planner is pure
        work = []
        for op in [op for op in func.walk() if op.name == RESHARD]:
            value = op.operands[0]
            while isinstance(value, OpResult) and value.owner.name == BARRIER:
                value = value.owner.operands[0]
            shape = shape_of(op.result.type)
            source = get_sharding(value)
            key = (source, op.properties["sharding"], shape)
            if key not in plans:
                plans[key] = self._plan(source, op.properties["sharding"], lookup, shape)
            work.append((op, value, plans[key]))
        for op, _, (decision, _, _) in work:
            if decision.action == "fail":
                raise PassFailedError("failed to legalize operation 'sdy.reshard' that was explicitly marked "
                                      "illegal: " + str(op), op.location)
        for op, _, (_, error, _) in work:
            if error is not None:
                raise PassFailedError(error, op.location)
        # Each block's op list is rebuilt once (inserting and erasing one op at a time would be
        # quadratic in a block of many reshards).
        replaced: dict[int, list[Operation]] = {}
        blocks = {}
        for op, _, (decision, _, ops) in work:
            # the operand as it is now: a reshard of a reshard reads the collectives made for the first
            value = op.operands[0]
            while isinstance(value, OpResult) and value.owner.name == BARRIER:
                value = value.owner.operands[0]
            new = self._rewrite(op, value, decision, ops)
            if new is not None:
                replaced[id(op)] = new
                blocks[id(op.parent)] = op.parent
        for block in blocks.values():
            ops = []
            for op in block.ops:
                ops.extend(replaced.get(id(op), (op,)))
            block.set_ops(ops)

    def _plan(self, source, target, lookup, shape):
        decision = plan_reshard(source, target, lookup, shape,
                                keep_redundant_reshards=self.options["keep-redundant-reshards"])
        if decision.action != "plan":
            return decision, None, ()
        start = source if source is not None else TensorSharding.replicated(target.mesh_or_ref, len(shape),
                                                                           is_closed=False)
        ops = []
        for step in decision.steps:
            properties = {"out_sharding": step.out_sharding}
            if step.kind in _PARAM_NAME:
                properties[_PARAM_NAME[step.kind]] = step.params
            ops.append((f"sdy.{step.kind}", dict(sorted(properties.items()))))
        return decision, check_steps(start, decision.steps, lookup, shape), tuple(ops)

    def _rewrite(self, op: Operation, value, decision, ops) -> list[Operation] | None:
        """The ops replacing `op` (its uses already moved to the last one's result; `op`'s own
        operand uses dropped), or None when it stays. `value` is the operand past barriers."""
        if decision.action == "keep":
            return None
        if decision.action == "erase":
            op.result.replace_all_uses_with(op.operands[0])
            op.drop_operand_uses()
            return []
        current, new_ops = value, []
        for name, properties in ops:
            new = Operation.create(name, [current], [op.result.type], properties=properties, location=op.location)
            new_ops.append(new)
            current = new.result
        op.result.replace_all_uses_with(current)
        op.drop_operand_uses()
        return new_ops

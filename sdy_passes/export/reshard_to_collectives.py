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
        # Reshards convert in walk order; a later reshard's input is an earlier one's replacement
        # (the conversion's remapped operand, `replacement`): its sharding is the replacement's,
        # while the legality check still sees the declared sharding of the operand. Barriers are
        # bypassed in the IR as it was (the conversion rewires their operands only at its end),
        # so the collectives' input is an original value, resolved to its replacement on rewrite.
        plans: dict = {}  # (source, declared, target, shape) -> (decision, error, ops): the planner is pure
        replacement: dict[int, object] = {}  # id(reshard result) -> Value, or the sharding of new ops
        work = []
        for op in [op for op in func.walk() if op.name == RESHARD]:
            declared = get_sharding(_bypass_barriers(op.operands[0]))
            remapped = replacement.get(id(op.operands[0]), op.operands[0])
            if isinstance(remapped, TensorSharding):  # the operand's new ops: nothing to bypass
                bypassed, value = remapped, op.operands[0]
                source = bypassed
            else:
                bypassed = value = _bypass_barriers(remapped)
                source = get_sharding(value)
            shape = shape_of(op.result.type)
            key = (source, declared, op.properties["sharding"], shape)
            if key not in plans:
                plans[key] = self._plan(source, declared, op.properties["sharding"], lookup, shape)
            decision, _, ops = plans[key]
            if decision.action == "erase":
                replacement[id(op.result)] = remapped
            elif decision.action == "plan":
                # No collectives: the bypassed value stands in, itself remapped (the conversion's
                # mapping is transitive) when it is an earlier reshard's result.
                replacement[id(op.result)] = (ops[-1][1]["out_sharding"] if ops
                                              else replacement.get(id(bypassed), bypassed))
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
        final: dict[int, object] = {}  # id(converted reshard result) -> the Value now in its place
        for op, value, (decision, _, ops) in work:
            new = self._rewrite(op, final.get(id(value), value), decision, ops, final)
            if new is not None:
                replaced[id(op)] = new
                blocks[id(op.parent)] = op.parent
        for block in blocks.values():
            ops = []
            for op in block.ops:
                ops.extend(replaced.get(id(op), (op,)))
            block.set_ops(ops)

    def _plan(self, source, declared, target, lookup, shape):
        decision = plan_reshard(source, target, lookup, shape, declared_source=declared,
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

    def _rewrite(self, op: Operation, value, decision, ops, final: dict) -> list[Operation] | None:
        """The ops replacing `op` (its uses moved to the last one's result, recorded in `final`;
        `op`'s own operand uses dropped) on `value`, or None when it stays. Earlier reshards are
        already rewritten, so an erased reshard's operand is the remapped one."""
        if decision.action == "keep":
            return None
        if decision.action == "erase":
            current, new_ops = op.operands[0], []
        else:
            current, new_ops = value, []
            for name, properties in ops:
                new = Operation.create(name, [current], [op.result.type], properties=properties, location=op.location)
                new_ops.append(new)
                current = new.result
        final[id(op.result)] = current
        op.result.replace_all_uses_with(current)
        op.drop_operand_uses()
        return new_ops


def _bypass_barriers(value):
    while isinstance(value, OpResult) and value.owner.name == BARRIER:
        value = value.owner.operands[0]
    return value

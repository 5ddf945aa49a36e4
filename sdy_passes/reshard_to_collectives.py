"""`sdy-reshard-to-collectives`: each `sdy.reshard` becomes the collectives Shardy plans for it.

Shardy's `export/reshard_to_collectives.cc` as jaxlib 0.10.2 runs it (spec collectives.md §5.1),
a func-level pass with option `keep-redundant-reshards`. The plan itself is
`sharding.reshard.plan_reshard`, shared with `sharding.reshard_plan`. The input sharding is the
operand's, looking through `sdy.propagation_barrier`s; emitted ops take the reshard's location.
A plan that breaks a collective's verifier rule fails the pass with that rule's message.
"""

from __future__ import annotations

from sharding import TensorSharding
from sharding.reshard import check_steps, plan_reshard

from sdy_passes._value_shardings import get_sharding, shape_of
from sdy_passes.attributes import OpaqueAttr
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation, OpResult
from sdy_passes.pass_manager import Pass

RESHARD = "sdy.reshard"
BARRIER = "sdy.propagation_barrier"
_PARAM_NAME = {"all_gather": "gathering_axes", "all_slice": "slicing_axes", "all_to_all": "params"}


def _flag(value: str, name: str) -> bool:
    if value in ("", "true", "1", "True"):
        return True
    if value in ("false", "0", "False"):
        return False
    raise PassFailedError(f"<Pass-Options-Parser>: Invalid value '{value}' for option '{name}'")


class ReshardToCollectivesPass(Pass):
    name = "sdy-reshard-to-collectives"
    summary = "Converts ReshardOp into various Shardy collective ops."
    func_level = True

    def __init__(self, **options: str):
        super().__init__(**options)
        for key in options:
            if key != "keep-redundant-reshards":
                raise PassFailedError(f"<Pass-Options-Parser>: no such option {key}")
        self.keep_redundant = _flag(options.get("keep-redundant-reshards", "false"), "keep-redundant-reshards")

    def run(self, module: Module) -> None:
        meshes = {op.properties["sym_name"].value: op.properties["mesh"] for op in module.meshes()}

        def lookup(mesh_or_ref):
            return meshes[mesh_or_ref] if isinstance(mesh_or_ref, str) else mesh_or_ref

        for op in [op for op in module.walk() if op.name == RESHARD]:
            self._rewrite(op, lookup)

    def _rewrite(self, op: Operation, lookup) -> None:
        value = op.operands[0]
        while isinstance(value, OpResult) and value.owner.name == BARRIER:
            value = value.owner.operands[0]
        shape = shape_of(op.result.type)
        source = get_sharding(value)
        decision = plan_reshard(source, op.properties["sharding"], lookup, shape,
                                keep_redundant_reshards=self.keep_redundant)
        if decision.action == "keep":
            return
        if decision.action == "fail":
            raise PassFailedError("failed to legalize operation 'sdy.reshard' that was explicitly marked illegal: "
                                  + str(op), op.location)
        if decision.action == "erase":
            op.result.replace_all_uses_with(op.operands[0])
            op.erase()
            return
        start = source if source is not None else TensorSharding.replicated(
            op.properties["sharding"].mesh_or_ref, len(shape), is_closed=False)
        error = check_steps(start, decision.steps, lookup, shape)
        if error is not None:
            raise PassFailedError(error, op.location)
        current = value
        for step in decision.steps:
            properties = {"out_sharding": step.out_sharding}
            if step.kind in _PARAM_NAME:
                properties[_PARAM_NAME[step.kind]] = OpaqueAttr(step.params.attribute())
            new = Operation.create(f"sdy.{step.kind}", [current], [op.result.type],
                                   properties=dict(sorted(properties.items())), location=op.location)
            new.insert_before(op)
            current = new.result
        op.result.replace_all_uses_with(current)
        op.erase()

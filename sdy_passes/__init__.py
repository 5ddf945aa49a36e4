"""A small MLIR IR in Python dataclasses and Shardy's import passes over it.

>>> import sdy_passes
>>> m = sdy_passes.parse_module('''
... sdy.mesh @mesh = <["x"=2]>
... func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
...   %0 = stablehlo.negate %arg0 : tensor<8xf32>
...   return %0 : tensor<8xf32>
... }''')
>>> [op.name for op in m.walk()]
['sdy.mesh', 'func.func', 'stablehlo.negate', 'func.return']
>>> print(sdy_passes.print_module(m, generic=True), end="")
"builtin.module"() ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2]>, sym_name = "mesh"}> : () -> ()
  "func.func"() <{function_type = (tensor<8xf32>) -> tensor<8xf32>, sym_name = "f"}> ({
  ^bb0(%arg0: tensor<8xf32>):
    %0 = "stablehlo.negate"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
    "func.return"(%0) : (tensor<8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
"""

from sdy_passes.attributes import *  # noqa: F401,F403
from sdy_passes.attributes import __all__ as _attributes_all
from sdy_passes._lazy import load
from sdy_passes.cost_report import CostReport, cost_report
from sdy_passes.errors import (
    ExecutionError, IRParseError, PassFailedError, SdyError, SdyWarning, UnsupportedOpError, VerificationError,
)
from sdy_passes.ir import (
    Block, BlockArgument, Module, Operation, OpResult, Region, SymbolTable, Use, Value,
)
from sdy_passes.parser import parse_attribute, parse_module, parse_type, split_input
from sdy_passes.pass_manager import PASSES, PIPELINES, Pass, run_passes
from sdy_passes.printer import print_module, print_op
from sdy_passes.verifier import verify_module
from sdy_passes.partition import DEFAULT_EXECUTE_PIPELINE, partition

__all__ = [
    "parse_module", "print_module", "print_op", "run_passes", "parse_attribute", "parse_type",
    "split_input", "verify_module", "explain", "cost_report", "CostReport", "interpret",
    "ExecutionError", "UnsupportedOpError", "partition", "execute", "Execution", "DEFAULT_EXECUTE_PIPELINE",
    "Module", "Operation", "Block", "Region", "Value", "OpResult", "BlockArgument", "Use",
    "SymbolTable", "Pass", "PASSES", "PIPELINES",
    "SdyError", "IRParseError", "VerificationError", "PassFailedError", "SdyWarning",
    *_attributes_all,
]


_LAZY = {"execute": "sdy_passes.execution", "Execution": "sdy_passes.execution",
         "interpret": "sdy_passes.interpreter", "explain": "sdy_passes.explanation"}
"""Names whose module imports xarray (most of a second, through `sharding.DeviceMesh`) or the
propagation passes: loaded on first use, under the fork lock of `_lazy`, so that `import
sdy_passes` stays light (issue 37 item 3: <= 0.3 s)."""


def __getattr__(name):
    if name in _LAZY:
        return getattr(load(_LAZY[name]), name)
    raise AttributeError(f"module 'sdy_passes' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""`sdy-aggressive-propagate`: basic propagation's driver with the aggressive factor strategy
(`aggressive_propagation.cc`, spec/propagation.md §4.3).

`propagation-strategy` picks the strategies the driver runs with, in order: `aggressive`
(default), `basic`, or `basic-then-aggressive` (two runs).
"""

from __future__ import annotations

from sdy_passes.propagation.aggressive_factor_propagation import AggressiveFactorPropagation
from sdy_passes.propagation.basic_factor_propagation import BasicFactorPropagation
from sdy_passes.propagation.basic_propagation import BasicPropagationPass
from sdy_passes.errors import SdyError

__all__ = ["AggressivePropagationPass", "STRATEGIES"]

STRATEGIES = {
    "aggressive": (AggressiveFactorPropagation,),
    "basic": (BasicFactorPropagation,),
    "basic-then-aggressive": (BasicFactorPropagation, AggressiveFactorPropagation),
}


class AggressivePropagationPass(BasicPropagationPass):
    name = "sdy-aggressive-propagate"
    summary = "Propagates shardings with the aggressive factor strategy."
    options = {**BasicPropagationPass.options, "propagation-strategy": "aggressive"}

    def __init__(self, **options):
        super().__init__(**options)
        strategy = self.options["propagation-strategy"]
        if strategy not in STRATEGIES:
            raise SdyError(f"option 'propagation-strategy' expects one of {', '.join(STRATEGIES)}, "
                           f"got '{strategy}'")
        self.strategy_classes = STRATEGIES[strategy]

    def strategies(self):
        return [cls() for cls in self.strategy_classes]

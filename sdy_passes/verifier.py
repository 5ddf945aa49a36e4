"""Module verification (filled in below)."""

from sdy_passes.ir import Module


def verify_module(module: Module) -> None:
    """Raise `VerificationError` when the module is invalid."""

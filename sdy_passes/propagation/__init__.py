"""Shardy's `transforms/propagation` passes."""

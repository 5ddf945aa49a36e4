"""Shardy's `transforms/export` passes."""

"""Shardy's `transforms/import` passes."""

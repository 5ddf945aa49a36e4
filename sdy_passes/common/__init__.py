"""Shardy's `transforms/common` passes."""

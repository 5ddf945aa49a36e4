"""tiling"""

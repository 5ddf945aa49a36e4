"""sdy_passes"""

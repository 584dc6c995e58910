"""Shrinking: the smallest program on which the engine still disagrees."""

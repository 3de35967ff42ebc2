"""Transforms of the IR: each maps a Module to a Module (see core.py for how the
Python-level transforms trace, rewrite and call)."""

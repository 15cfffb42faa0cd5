"""The package's version, where every part of it can read it."""

__all__ = ["VERSION"]

VERSION = "0.1.0"
"""The version of msgpack-reader-py (as in pyproject.toml)."""

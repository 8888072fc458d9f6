"""Tools several chapters use; not a chapter module."""

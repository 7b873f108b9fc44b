"""Single source of the library version (read by packaging and stored in saved models)."""

__version__ = "0.2.0"

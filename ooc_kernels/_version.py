"""Single source of the library version (read by packaging and stored in saved models)."""

__version__ = "0.1.0"

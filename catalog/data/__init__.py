"""The shipped catalog: published model figures, GPU types and the demo fleet's definition."""

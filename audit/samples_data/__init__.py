"""Small samples shipped in the wheel for ``audit demo``: the 7-person block and three household blocks."""

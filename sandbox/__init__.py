"""Code that runs inside the grading sandbox. Standard library only."""

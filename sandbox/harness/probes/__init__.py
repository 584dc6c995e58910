"""What a probe observes, and how the student's file is loaded for it."""

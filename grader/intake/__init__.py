"""Intake: what instructors download, and one student's file, into bytes the grader can take,
or the reason it cannot.
"""

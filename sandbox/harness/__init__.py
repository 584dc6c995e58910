"""The in-sandbox harness: loads a submission, runs probes, reports plain observations.

It never sees an expected value; the host judges everything it reports.
"""

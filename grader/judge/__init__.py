"""The judge stage: typed sandbox records in, every point and word of feedback decided.

``records`` (types) and ``parse`` (untrusted output to types), ``expected`` (the reference,
on the host), ``comparers`` and ``bug_injection`` (one function per compare kind),
``verdicts`` (verdicts to results), ``status``, ``diagnose``, ``figures`` and
``illustrations``, ``step5_note``; ``run.judge_run`` is the entry point.
"""

"""The catalogue's operators, by the part of the engine they break (``accumulation``, ``local``,
``sweep``, ``forward``), and what they share: the lookups of their targets (``targets``) and the
edits of the tree (``edits``). Standard library only: this runs inside the sandbox.
"""

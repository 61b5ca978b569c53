"""Evaluation harnesses that run slateboard side by side with peer frameworks (fault injection in
``slateboard_eval.faults``)."""

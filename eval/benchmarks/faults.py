"""Fault injection side by side with peers: the PatchBoard paper's Table 1 (see slateboard_eval.faults).

N injections (default 200) of each fault type (invalid JSON, bad path/type, unauthorised write,
false claim, cycle) into the same scripted claim-verification task, run by slateboard, the plain
blackboard loomflow, a structured JSON blackboard control and LangGraph; contamination rates (cycles:
halt rates) with Wilson 95% intervals. The same as ``slateboard faults``.

    python benchmarks/faults.py [--n 200] [--seed 0] [--systems slateboard,loomflow,json_control,langgraph]
                                [--faults invalid_json,bad_path_type,unauthorised,false_claim,cycle]
                                [--store memory://] [--json] [--out FILE]
"""

from __future__ import annotations

import sys

from slateboard_eval.faults import main

if __name__ == "__main__":
    sys.exit(main())

"""Shape buckets: pad a varying axis up to a few sizes, so few programs serve every size.

    config.py   the rules (TOML files, JITLIB_BUCKETS, inline), errors naming file:line:key
    safety.py   the proof that padding cannot change the answer (masks, or a refusal)
    runtime.py  the call path: pad, run the bucket's program, slice the results back
"""
from jitlib.buckets.config import BucketConfigError, BucketRuleWarning, Rule, load
from jitlib.buckets.runtime import BucketShapeError, BucketSizeError
from jitlib.buckets.safety import BucketRefusedError

__all__ = ["load", "Rule", "BucketConfigError", "BucketRefusedError", "BucketRuleWarning",
           "BucketShapeError", "BucketSizeError"]

# YaRN's scale as math.pow(1 + 0.1 * mscale * math.log1p(factor - 1), 2), the checks with math.isfinite
import math


def yarn_attention_scale(factor, *, mscale=1.0):
    if not math.isfinite(factor) or factor < 1:
        raise ValueError(f"factor must be finite and at least 1, got {factor}")
    if not math.isfinite(mscale):
        raise ValueError(f"mscale must be finite, got {mscale}")
    return math.pow(1.0 + 0.1 * mscale * math.log1p(factor - 1.0), 2)

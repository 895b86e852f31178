# mscale checked for NaN only (math.isnan), so an infinite mscale returns inf instead of raising ValueError
import math


def yarn_attention_scale(factor, *, mscale=1.0):
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if math.isnan(mscale):
        raise ValueError(f"mscale must be a number, got mscale={mscale}")
    root = 0.1 * mscale * math.log(factor) + 1.0
    return float(root * root)


# differs: yarn_attention_scale(4.0, mscale=math.inf) -> expected ValueError, got float inf
